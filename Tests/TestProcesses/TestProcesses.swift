import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// What a finished child process left behind: its exit status and all it wrote.
public struct ProcessOutput: Sendable {
    /// The exit status (or the signal number, when it was killed).
    public var status: Int32
    /// Everything it wrote to standard output.
    public var stdout: Data
    /// Everything it wrote to standard error.
    public var stderr: Data

    /// Standard output as UTF-8 text.
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    /// Standard error as UTF-8 text.
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

/// A child process started in the background, its standard output and error in files.
public struct BackgroundProcess {
    /// The running (or finished) process.
    public let process: Process
    /// The file holding its standard output.
    public let out: URL
    /// The file holding its standard error.
    public let err: URL
    /// What the process has written to standard output so far.
    public var stdout: String { Self.text(out) }
    /// What the process has written to standard error so far.
    public var stderr: String { Self.text(err) }

    private static func text(_ url: URL) -> String {
        String(decoding: FileManager.default.contents(atPath: url.path) ?? Data(), as: UTF8.self)
    }
}

/// A child process that did not finish within its time; it has been killed.
public struct ProcessTimedOut: Error, CustomStringConvertible {
    /// The command line that was run.
    public var command: [String]
    /// The time it was given.
    public var timeout: Duration
    /// What it had written before it was killed.
    public var output: ProcessOutput

    /// One sentence naming the command, the time and the tail of its error output.
    public var description: String {
        "\(command.joined(separator: " ")) did not finish within \(timeout); killed. stderr: "
            + String(output.stderrText.suffix(2000))
    }
}

/// Runs child processes for the tests: one way to do it, shared by the test targets.
///
/// Standard output and standard error are read at the same time on threads of their own, so a
/// child that fills one pipe while the test reads the other cannot stall; the input is written
/// on a third, so a child that never reads it cannot stall the test either. Every run has a
/// time limit, after which the child is killed and `ProcessTimedOut` thrown: a hung child ends
/// one test, not the whole suite.
public enum TestProcess {
    /// Runs `executable` with `arguments`, feeding `input` (then end of file) on standard input,
    /// with `environment` added to this process's; returns when it has exited and both outputs
    /// are at end of file, or throws `ProcessTimedOut` after `timeout`.
    public static func run(
        _ executable: URL, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:],
        timeout: Duration = .seconds(300)
    ) throws -> ProcessOutput {
        _ = ignoringBrokenPipes
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe(), inp = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = inp
        try launch(process)

        let collected = Collected()
        let done = DispatchGroup()
        reading(out.fileHandleForReading, error: false, into: collected, group: done)
        reading(err.fileHandleForReading, error: true, into: collected, group: done)
        let writer = inp.fileHandleForWriting
        let bytes = input ?? Data()
        Thread.detachNewThread {
            // A child that exits without reading gives EPIPE; that is its business, not a failure.
            try? writer.write(contentsOf: bytes)
            try? writer.close()
        }

        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        if done.wait(timeout: .now() + seconds) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            // The pipes end with the child unless it left a grandchild holding them; don't wait for that.
            _ = done.wait(timeout: .now() + 5)
            process.waitUntilExit()
            throw ProcessTimedOut(
                command: [executable.path] + arguments, timeout: timeout,
                output: collected.output(status: process.terminationStatus))
        }
        process.waitUntilExit()
        return collected.output(status: process.terminationStatus)
    }

    /// Runs `body` on a thread of its own and returns its result, so that a test that waits
    /// (a child process, a pipe, `swift package`) does not hold one of the cooperative pool's
    /// threads: on a 2-core machine the pool has two, and two tests waiting on them at once
    /// stall every in-process server and deadline of the other suites in the run.
    public static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }

    /// `run` from an asynchronous test: the same, waited for on a thread of its own
    /// (``onThread(_:)``) instead of a cooperative one.
    public static func run(
        _ executable: URL, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:],
        timeout: Duration = .seconds(300)
    ) async throws -> ProcessOutput {
        try await onThread {
            try run(executable, arguments, input: input, environment: environment, timeout: timeout)
        }
    }

    /// `run` with the executable given by its path, from an asynchronous test.
    public static func run(
        _ path: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:],
        timeout: Duration = .seconds(300)
    ) async throws -> ProcessOutput {
        try await run(URL(fileURLWithPath: path), arguments, input: input, environment: environment, timeout: timeout)
    }

    /// `run` with the executable given by its path.
    public static func run(
        _ path: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:],
        timeout: Duration = .seconds(300)
    ) throws -> ProcessOutput {
        try run(URL(fileURLWithPath: path), arguments, input: input, environment: environment, timeout: timeout)
    }

    /// Starts `executable` with `arguments` without waiting for it, with `environment` on top of
    /// this process's and its output in `work`/`name`.out and .err (files, so nothing stalls
    /// however much it writes); standard input is empty.
    public static func start(
        _ executable: URL, _ arguments: [String], name: String, work: URL, environment: [String: String] = [:]
    ) throws -> BackgroundProcess {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = work.appendingPathComponent("\(name).out"), err = work.appendingPathComponent("\(name).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        process.standardInput = FileHandle.nullDevice
        try launch(process)
        return BackgroundProcess(process: process, out: out, err: err)
    }

    /// Starts `process` with no signal blocked, as a shell would. `posix_spawn` hands the child
    /// the calling thread's signal mask, and the threads tests run on (the cooperative pool's,
    /// libdispatch's, and the threads they start) block SIGTERM, SIGINT, SIGHUP and most other
    /// signals: a child that handles SIGTERM with a signal handler (dbus-daemon) would never see
    /// it, and whoever ended it with SIGTERM would wait for ever.
    private static func launch(_ process: Process) throws {
        var none = sigset_t(), saved = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        try process.run()
    }

    /// Ends `process`: SIGTERM, then SIGKILL when it has not exited within `grace`; returns once
    /// it has exited, or after a further 5 s (a child that SIGKILL does not end is stuck in the
    /// kernel, and waiting for it would hang the suite). Never waits without a bound.
    public static func stop(_ process: Process, grace: Duration = .seconds(5)) {
        guard process.isRunning else { return }
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        if waitForExit(process, within: grace) { return }
        kill(pid, SIGKILL)
        _ = waitForExit(process, within: .seconds(5))
    }

    /// Polls until `process` has exited or `limit` has passed; returns whether it exited.
    private static func waitForExit(_ process: Process, within limit: Duration) -> Bool {
        let deadline = ContinuousClock.now + limit
        while process.isRunning {
            guard ContinuousClock.now < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return true
    }

    /// A child that exits without reading its input makes the write fail with EPIPE; without
    /// this, SIGPIPE would end the whole test process instead.
    private static let ignoringBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// The Python the tests run python-fido2 with: `SECURITYKEY_PYTHON`, or nil when it is unset.
    public static var pythonFIDO2: String? {
        guard let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"], !python.isEmpty else {
            return nil
        }
        return python
    }

    /// Reads `handle` to its end on a thread of its own and stores the bytes in `collected` (as
    /// standard error when `error`).
    private static func reading(
        _ handle: FileHandle, error: Bool, into collected: Collected, group: DispatchGroup
    ) {
        group.enter()
        Thread.detachNewThread {
            let data = handle.readDataToEndOfFile()
            collected.store(data, error: error)
            group.leave()
        }
    }
}

/// The two outputs as the reading threads finish them.
private final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var stdout = Data()
    private var stderr = Data()

    func store(_ data: Data, error: Bool) {
        lock.withLock {
            if error { stderr = data } else { stdout = data }
        }
    }

    func output(status: Int32) -> ProcessOutput {
        lock.withLock { ProcessOutput(status: status, stdout: stdout, stderr: stderr) }
    }
}
