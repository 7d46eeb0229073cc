import Foundation

/// A `securitykey fleet --watch --ndjson` process writing to a file, and the events read back
/// from it; killed (SIGKILL: the test runner's children may inherit SIGTERM blocked) when dropped.
final class FleetWatcher {
    let process = Process()
    let output: URL

    init(_ arguments: [String], environment: [String: String] = [:], in directory: URL) throws {
        output = directory.appendingPathComponent("watch-\(UUID()).out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        process.executableURL = CLIRunner.binary
        process.arguments = ["fleet", "--watch", "--ndjson"] + arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The events printed so far, polled until `done` holds or `seconds` pass.
    func events(within seconds: Double, until done: ([[String: Any]]) -> Bool) -> [[String: Any]] {
        let end = Date().addingTimeInterval(seconds)
        var seen: [[String: Any]] = []
        while Date() < end {
            let text = String(decoding: FileManager.default.contents(atPath: output.path) ?? Data(), as: UTF8.self)
            seen = text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            if done(seen) { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return seen
    }
}
