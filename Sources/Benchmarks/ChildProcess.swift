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
    private let process: SpawnedProcess
    private var buffered: [UInt8] = []

    /// Starts `executable` with `arguments` and extra `environment` entries.
    init(
        name: String, executable: String, arguments: [String], environment: [String: String] = [:],
        logDirectory: String
    ) throws(BenchError) {
        self.name = name
        let safe = String(name.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" })
        logPath = "\(logDirectory)/\(safe).log"
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process = try SpawnedProcess(
            executable: executable, arguments: arguments, environment: env, errorPath: logPath)
    }

    /// The process ID.
    var pid: Int32 { process.pid }

    /// Sends one line to the child's standard input.
    func send(_ line: String) throws(BenchError) {
        guard process.write(Array((line + "\n").utf8)) else {
            throw BenchError(.child, "\(name) stopped reading its input. \(logTail())")
        }
    }

    /// The next line the child prints, waiting at most `timeout`.
    func readLine(timeout: Duration) throws(BenchError) -> String {
        let deadline = ContinuousClock.now + timeout
        let outputDescriptor = process.output
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
            throw BenchError(
                .child, "\(name) printed something that is not a JSON object: \(line.prefix(200))")
        }
        return object
    }

    /// Ends the child: `quitLine` and end of input (drivers), or SIGTERM when `quitLine` is nil
    /// (virtual keys); SIGTERM then SIGKILL if it lingers. Returns its exit status.
    @discardableResult
    func stop(quitLine: String? = "quit", grace: Duration = .seconds(5)) -> Int32? {
        if let quitLine { _ = process.write(Array((quitLine + "\n").utf8)) }
        process.closeInput()
        if quitLine == nil { process.signal(SIGTERM) }
        if let status = process.waitForExit(within: grace) { return status }
        process.signal(SIGTERM)
        if let status = process.waitForExit(within: .seconds(2)) { return status }
        process.signal(SIGKILL)
        return process.waitForExit(within: .seconds(2))
    }

    /// The last lines of the child's standard error, for error messages.
    func logTail() -> String {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return "" }
        let lines = text.split(separator: "\n").suffix(3)
        return lines.isEmpty
            ? "(Its log \(logPath) is empty.)" : "Its log says: " + lines.joined(separator: " | ")
    }
}
