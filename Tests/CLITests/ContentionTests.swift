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

        func start(_ rp: String) throws -> (Process, URL, URL) {
            let process = Process()
            process.executableURL = CLIRunner.binary
            process.arguments = ["register", "--device", device, "--rp", rp, "--user", "u", "--json", "--timeout", "10"]
            let out = work.appendingPathComponent("\(rp).out"), err = work.appendingPathComponent("\(rp).err")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            _ = FileManager.default.createFile(atPath: err.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = try FileHandle(forWritingTo: err)
            process.standardInput = FileHandle.nullDevice
            try process.run()
            return (process, out, err)
        }
        let first = try start("first.example")
        Thread.sleep(forTimeInterval: 0.4)
        let second = try start("second.example")
        first.0.waitUntilExit()
        second.0.waitUntilExit()
        func text(_ url: URL) -> String {
            String(decoding: FileManager.default.contents(atPath: url.path) ?? Data(), as: UTF8.self)
        }
        #expect(first.0.terminationStatus == 0, "\(text(first.2))")
        #expect(second.0.terminationStatus == 0, "\(text(second.2))")
        // Each got its own credential for its own RP: nothing crossed between the exchanges.
        for (rp, run) in [("first.example", first), ("second.example", second)] {
            let object = try JSONSerialization.jsonObject(with: Data(text(run.1).utf8)) as? [String: Any]
            #expect(object?["rpId"] as? String == rp)
        }
        #expect(text(second.2).contains("busy with another application"), "\(text(second.2))")
        #expect(!text(first.2).contains("busy with another application"))
    }
}
