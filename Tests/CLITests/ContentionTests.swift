import Foundation
import Testing

/// Two CLI processes on one key at once: serialized, neither exchange corrupted, and the one
/// that waits is told why on standard error.
@Suite struct ContentionTests {
    /// CTAPHID over UDP: the virtual key serves one channel at a time and answers another
    /// ERR_CHANNEL_BUSY (CTAP 2.1 §11.2.9.1.3 keeps one transaction per device); the second
    /// process waits, says so, and succeeds once the first is done.
    @Test func twoProcessesOnOneUDPKeyAreSerializedAndTheSecondIsToldWhy() throws {
        let port = CLIRunner.freeUDPPort()
        let work = try ChoiceCommandTests.scratch("contention")
        defer { try? FileManager.default.removeItem(at: work) }
        // Each touch takes 1.5 s, so the second request arrives while the first waits for one.
        let key = try ChoiceCommandTests.ServedKey(
            ["--udp", "127.0.0.1:\(port)", "--presence", "delay:1500"], log: work.appendingPathComponent("serve.log"))
        let device = "udp:127.0.0.1:\(port)?local=0"
        var ready = false
        for _ in 0..<100 where !ready {
            ready = (try? CLIRunner.run(["info", "--device", device]).status) == 0
            if !ready { Thread.sleep(forTimeInterval: 0.05) }
        }
        try #require(ready, "the UDP key did not answer: \(key.logText)")

        func start(_ rp: String) throws -> CLIRunner.Background {
            try CLIRunner.start(
                ["register", "--device", device, "--rp", rp, "--user", "u", "--json", "--timeout", "10"],
                name: rp, work: work)
        }
        let first = try start("first.example")
        Thread.sleep(forTimeInterval: 0.4)
        let second = try start("second.example")
        first.process.waitUntilExit()
        second.process.waitUntilExit()
        #expect(first.process.terminationStatus == 0, "\(first.stderr)")
        #expect(second.process.terminationStatus == 0, "\(second.stderr)")
        // Each got its own credential for its own RP: nothing crossed between the exchanges.
        for (rp, run) in [("first.example", first), ("second.example", second)] {
            let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
            #expect(object?["rpId"] as? String == rp)
        }
        #expect(second.stderr.contains("busy with another application"), "\(second.stderr)")
        #expect(!first.stderr.contains("busy with another application"))
    }
}
