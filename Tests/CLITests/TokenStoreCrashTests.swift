import Foundation
import Testing

/// `securitykey token save` killed with SIGKILL at random points: the stored tokens file
/// (tokens.cbor, written through PrivateFile) is always the old content byte for byte or the
/// whole new record, never a torn file; and the temporary files the killed writers left are
/// gone after the next save.
extension TokenCommandTests {
    @Test func sigkillDuringTokenSavesLeavesTheOldOrTheNewFile() throws {
        let bench = try Bench.withPINAndCredential()
        // One save to time, and the first content.
        let started = Date()
        _ = try bench.object(["token", "save", "--pin-stdin"], input: "1234\n")
        // How long a save takes here, kept up to date from the rounds a save finished in (the
        // machine's load changes while the test runs).
        var duration = max(Date().timeIntervalSince(started), 0.2)
        let directory = URL(fileURLWithPath: bench.storePath).deletingLastPathComponent()

        var generator = SystemRandomNumberGenerator()
        var replaced = 0
        for round in 1...20 {
            let old = try #require(FileManager.default.contents(atPath: bench.storePath))
            let roundStart = Int64(Date().timeIntervalSince1970)
            let save = Process()
            save.executableURL = CLIRunner.binary
            save.arguments = ["token", "save", "--pin-stdin", "--device", bench.device]
            save.environment = ProcessInfo.processInfo.environment.merging(bench.environment) { $1 }
            let input = Pipe()
            save.standardInput = input
            save.standardOutput = FileHandle.nullDevice
            save.standardError = FileHandle.nullDevice
            try save.run()
            try input.fileHandleForWriting.write(contentsOf: Data("1234\n".utf8))
            try input.fileHandleForWriting.close()
            // Anywhere from the middle of the run to after its end: some kills land before the
            // write, some during it, some find the process done.
            let launched = Date()
            let killAt = launched.addingTimeInterval(
                Double.random(in: (0.3 * duration)...(2.0 * duration), using: &generator))
            while save.isRunning && Date() < killAt { Thread.sleep(forTimeInterval: 0.005) }
            if save.isRunning {
                kill(save.processIdentifier, SIGKILL)
            } else {
                duration = max(0.2, 0.6 * duration + 0.4 * Date().timeIntervalSince(launched))
            }
            save.waitUntilExit()

            let now = try #require(
                FileManager.default.contents(atPath: bench.storePath), "round \(round): the file is gone")
            if now == old { continue }
            // Not the old bytes: then the whole new record, saved in this round.
            replaced += 1
            let listed = try bench.run(["token", "list", "--json"])
            try #require(listed.status == 0, "round \(round): the file does not parse: \(listed.stderr)")
            let records = try #require(
                try listed.json() as? [[String: Any]], "round \(round): \(listed.stdout)")
            #expect(records.count == 1, "round \(round): \(records)")
            let savedAt = try #require(
                (records.first?["savedAt"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) },
                "round \(round): \(records)")
            #expect(
                Int64(savedAt.timeIntervalSince1970) >= roundStart - 1,
                "round \(round): an older record: \(records)")
            #expect(records.first?["device"] as? String == bench.device, "round \(round): \(records)")
        }
        print("token saves killed: \(20 - replaced) left the old file, \(replaced) the new one")
        // Some saves did finish: the test saw replacements, not only unchanged files.
        #expect(replaced >= 1, "no save completed in 20 rounds")

        // A save that runs to its end leaves a token that reads without the PIN, and no
        // temporary file of a killed writer beside it.
        _ = try bench.object(["token", "save", "--pin-stdin"], input: "1234\n")
        let listed = try bench.run(["credentials", "list", "--pin-stdin", "--json"], input: "")
        #expect(listed.status == 0, "\(listed.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(names == ["tokens.cbor"], "\(names)")
    }
}

extension TokenCommandTests.Bench {
    /// A served key with the PIN 1234 and one discoverable credential for example.com.
    static func withPINAndCredential() throws -> TokenCommandTests.Bench {
        let bench = try TokenCommandTests.Bench()
        try bench.serve()
        _ = try bench.object(["pin", "set", "--pin-stdin"], input: "1234\n")
        _ = try bench.object(
            ["register", "--rp", "example.com", "--user", "alice", "--resident", "--pin-stdin"],
            input: "1234\n")
        return bench
    }
}
