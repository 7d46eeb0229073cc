#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// What a finished child process left: its exit status (128 + signal when a signal ended it)
/// and what it wrote on standard output and standard error.
struct ChildProcessResult: Sendable {
    var status: Int32
    var output: String
    var errors: String
}

/// Runs a program to completion with posix_spawn and waitpid, off the cooperative pool.
///
/// Not Foundation's `Process`: in the QEMU guest (scripts/hidvm) Foundation cannot create
/// CFSocket's wakeup socket pair, so `Process` never learns that its child exited. Output goes
/// to temporary files rather than pipes, so a chatty child never blocks on a full pipe. The
/// child is killed when `timeout` passes (status 128 + SIGKILL).
func runChild(
    _ executable: String, _ arguments: [String], timeout: Duration = .seconds(300)
) async throws -> ChildProcessResult {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let outputPath = directory.appendingPathComponent("stdout").path
    let errorsPath = directory.appendingPathComponent("stderr").path

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errorsPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    guard spawned == 0 else {
        throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO)
    }
    let child = pid
    let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
        Thread.detachNewThread {
            let deadline = ContinuousClock.now + timeout
            var raw: Int32 = 0
            while true {
                let reaped = waitpid(child, &raw, WNOHANG)
                if reaped == child || (reaped < 0 && errno != EINTR) { break }
                if ContinuousClock.now >= deadline {
                    kill(child, SIGKILL)
                    _ = waitpid(child, &raw, 0)
                    break
                }
                usleep(5_000)
            }
            // The wait(2) status word: low 7 bits the terminating signal, else bits 8-15 the exit code.
            let signal = raw & 0x7F
            continuation.resume(returning: signal == 0 ? (raw >> 8) & 0xFF : 128 + signal)
        }
    }
    let read = { (path: String) in
        String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
    }
    return ChildProcessResult(status: status, output: read(outputPath), errors: read(errorsPath))
}
