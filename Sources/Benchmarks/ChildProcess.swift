#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// A child process the benchmark starts (a driver or a virtual key), spoken to in lines.
///
/// Used only from the orchestrator's main thread: reads wait in `poll` with a deadline, so a
/// child that hangs fails its step instead of hanging the benchmark. Its standard error goes to
/// a log file whose tail is shown when it fails.
final class ChildProcess {
    let name: String
    let logPath: String
    private let process: Process
    private let input: FileHandle
    private let outputDescriptor: Int32
    private var buffered: [UInt8] = []
    private var closedInput = false

    /// Starts `executable` with `arguments` and extra `environment` entries.
    init(
        name: String, executable: String, arguments: [String], environment: [String: String] = [:],
        logDirectory: String
    ) throws(BenchError) {
        self.name = name
        let safe = String(name.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" })
        logPath = "\(logDirectory)/\(safe).log"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let stdinPipe = Pipe()
        let stdoutPipe = Pipe()
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        guard let log = FileHandle(forWritingAtPath: logPath) else {
            throw BenchError(.system, "Cannot create the log file \(logPath).")
        }
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = log
        do { try process.run() } catch {
            throw BenchError(.child, "Cannot start \(name) (\(executable)): \(error.localizedDescription)")
        }
        try? log.close()
        self.process = process
        input = stdinPipe.fileHandleForWriting
        outputDescriptor = stdoutPipe.fileHandleForReading.fileDescriptor
    }

    /// The process ID.
    var pid: Int32 { process.processIdentifier }

    /// Sends one line to the child's standard input.
    func send(_ line: String) throws(BenchError) {
        do { try input.write(contentsOf: Data((line + "\n").utf8)) } catch {
            throw BenchError(.child, "\(name) stopped reading its input. \(logTail())")
        }
    }

    /// The next line the child prints, waiting at most `timeout`.
    func readLine(timeout: Duration) throws(BenchError) -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else {
                throw BenchError(.timeout, "\(name) printed nothing within \(timeout). \(logTail())")
            }
            let milliseconds = Int32(clamping: remaining.nanoseconds / 1_000_000 + 1)
            var descriptor = pollfd(fd: outputDescriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw BenchError(.system, "poll on \(name)'s output failed (errno \(errno)).")
            }
            if ready == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { read(outputDescriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw BenchError(.system, "Reading \(name)'s output failed (errno \(errno)).")
            }
            if count == 0 {
                throw BenchError(.child, "\(name) exited. \(logTail())")
            }
            // A driver's line holds at most a million latencies; refuse anything absurd.
            guard buffered.count + count <= 64 << 20 else {
                throw BenchError(.child, "\(name) printed a line longer than 64 MiB.")
            }
            buffered += chunk[..<count]
        }
    }

    /// The next line parsed as a JSON object.
    func readJSON(timeout: Duration) throws(BenchError) -> [String: Any] {
        let line = try readLine(timeout: timeout)
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw BenchError(.child, "\(name) printed something that is not a JSON object: \(line.prefix(200))")
        }
        return object
    }

    /// Asks the child to end (`quit`, end of input, then SIGTERM, then SIGKILL) and waits for it.
    func stop(quitLine: String? = "quit", grace: Duration = .seconds(5)) {
        if let quitLine, !closedInput { try? send(quitLine) }
        if !closedInput {
            try? input.close()
            closedInput = true
        }
        if quitLine == nil, process.isRunning { kill(pid, SIGTERM) }
        if !waitForExit(within: grace), process.isRunning {
            kill(pid, SIGTERM)
            if !waitForExit(within: .seconds(2)) { kill(pid, SIGKILL) }
        }
        _ = waitForExit(within: .seconds(2))
    }

    private func waitForExit(within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            if ContinuousClock.now >= deadline { return false }
            usleep(10_000)
        }
        return true
    }

    /// The last lines of the child's standard error, for error messages.
    func logTail() -> String {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return "" }
        let lines = text.split(separator: "\n").suffix(3)
        return lines.isEmpty ? "(Its log \(logPath) is empty.)" : "Its log says: " + lines.joined(separator: " | ")
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
