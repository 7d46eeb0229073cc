#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// A process started with `posix_spawn`, reaped with `waitpid`.
///
/// Foundation's `Process` reports exit through its own run-loop machinery, which never ran while
/// the orchestrator's main thread waited (children stayed zombies); this does nothing behind the
/// caller's back.
final class SpawnedProcess {
    /// The process ID.
    let pid: pid_t
    /// The parent's end of the child's standard input (-1 if not piped).
    private(set) var input: Int32
    /// The parent's end of the child's standard output (-1 if not piped).
    private(set) var output: Int32
    private var status: Int32?

    /// Starts `executable`; standard input and output are pipes, standard error goes to `errorPath`.
    /// With `track` false the child is not stopped on interrupt (the clean-up itself spawns such).
    init(
        executable: String, arguments: [String], environment: [String: String], errorPath: String,
        track: Bool = true
    ) throws(BenchError) {
        var inputPipe: [Int32] = [-1, -1]
        var outputPipe: [Int32] = [-1, -1]
        guard pipe(&inputPipe) == 0 else { throw BenchError(.system, "pipe failed (errno \(errno)).") }
        guard pipe(&outputPipe) == 0 else {
            close(inputPipe[0])
            close(inputPipe[1])
            throw BenchError(.system, "pipe failed (errno \(errno)).")
        }
        // Only the orchestrator's thread spawns, so marking close-on-exec after pipe() is not racy;
        // without it one child would inherit another's pipe ends and never see end of file.
        for descriptor in inputPipe + outputPipe { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with default signal handling even though this process ignores SIGPIPE.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") }
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let argvList: [UnsafeMutablePointer<CChar>?] = argv + [nil]
        let envpList: [UnsafeMutablePointer<CChar>?] = envp + [nil]
        let result = posix_spawn(&pid, executable, &actions, &attributes, argvList, envpList)
        close(inputPipe[0])
        close(outputPipe[1])
        guard result == 0 else {
            close(inputPipe[1])
            close(outputPipe[0])
            throw BenchError(.child, "Cannot start \(executable): \(String(cString: strerror(result))).")
        }
        guard !track || InterruptCleanup.register(child: pid) else {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            _ = waitpid(pid, &raw, 0)
            close(inputPipe[1])
            close(outputPipe[0])
            throw BenchError(.child, "Interrupted.")
        }
        self.pid = pid
        input = inputPipe[1]
        output = outputPipe[0]
    }

    /// Writes all of `bytes` to the child's standard input.
    func write(_ bytes: [UInt8]) -> Bool {
        guard input >= 0 else { return false }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.write(input, $0.baseAddress.map { $0 + offset }, $0.count - offset)
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Closes the child's standard input (it sees end of file).
    func closeInput() {
        if input >= 0 { close(input) }
        input = -1
    }

    /// The exit status once the child has exited (`waitpid` with WNOHANG); nil while it runs.
    func exitStatus() -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        guard result == pid else { return nil }
        // WIFEXITED / WEXITSTATUS, spelled out (the C macros are not imported).
        let signal = raw & 0x7F
        status = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
        InterruptCleanup.unregister(child: pid)
        return status
    }

    /// Kills the child (SIGKILL) unless it was reaped, reaps it and returns the CPU time (user +
    /// system, nanoseconds) it used, from `wait4`; nil when it had been reaped already.
    func killAndReapCPU() -> UInt64? {
        guard status == nil else { return nil }
        kill(pid, SIGKILL)
        var raw: Int32 = 0
        var usage = rusage()
        while wait4(pid, &raw, 0, &usage) < 0 {
            guard errno == EINTR else { return nil }
        }
        let signal = raw & 0x7F
        status = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
        InterruptCleanup.unregister(child: pid)
        func nanoseconds(_ time: timeval) -> UInt64 {
            UInt64(max(0, time.tv_sec)) &* 1_000_000_000 &+ UInt64(max(0, time.tv_usec)) &* 1_000
        }
        return nanoseconds(usage.ru_utime) &+ nanoseconds(usage.ru_stime)
    }

    /// Waits up to `timeout` for the child to exit.
    func waitForExit(within timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = exitStatus() { return status }
            if ContinuousClock.now >= deadline { return nil }
            usleep(5_000)
        }
    }

    /// Sends `signal` if the child has not been reaped yet.
    func signal(_ number: Int32) {
        if exitStatus() == nil { kill(pid, number) }
    }

    deinit {
        closeInput()
        if output >= 0 { close(output) }
        if exitStatus() == nil {
            kill(pid, SIGKILL)
            _ = waitForExit(within: .seconds(2))
        }
    }
}
