import Foundation
import Testing

/// `securitykey bio` against `virtual serve --udp --profile ctap21 --bio-samples ...`, asserting
/// on `--json`: each scripted sample's status is the one the key was told to give.
@Suite(.serialized) struct BioCommandTests {
    @Test func enrollListRenameDeleteOverUDP() throws {
        let port = CLIRunner.freeUDPPort()
        let work = try ChoiceCommandTests.scratch("bio-udp")
        defer { try? FileManager.default.removeItem(at: work) }
        let script = ["too-high", "good", "too-low", "poor-quality", "good", "merge-failure", "good"]
        let key = try ChoiceCommandTests.ServedKey(
            [
                "--udp", "127.0.0.1:\(port)", "--state", work.appendingPathComponent("state").path, "--profile",
                "ctap21", "--pin", "1234", "--bio-samples", script.joined(separator: ","), "--bio-samples-required", "3",
            ],
            log: work.appendingPathComponent("serve.log"))
        let device = "udp:127.0.0.1:\(port)?local=0"
        func run(_ arguments: [String]) throws -> CLIRunner.Result {
            try CLIRunner.run(arguments + ["--device", device, "--pin-stdin", "--json"], input: "1234\n")
        }
        var ready = false
        for _ in 0..<100 where !ready {
            ready = (try? CLIRunner.run(["info", "--device", device]).status) == 0
            if !ready { Thread.sleep(forTimeInterval: 0.05) }
        }
        try #require(ready, "the UDP key did not answer: \(key.logText)")

        let info = try run(["bio", "info"]).object()
        #expect(info["fingerprintKind"] as? String == "touch")
        #expect(info["samplesRequired"] as? Int == 3)
        #expect(info["enrolled"] as? Bool == false)
        #expect((try run(["bio", "list"]).json() as? [Any])?.isEmpty == true)

        let enroll = try run(["bio", "enroll", "--name", "left index"])
        try #require(enroll.status == 0, "\(enroll.stderr)")
        let enrolled = try enroll.object()
        let samples = enrolled["samples"] as? [[String: Any]] ?? []
        #expect(samples.map { $0["status"] as? String } == script)
        #expect(samples.map { $0["remaining"] as? Int } == [3, 2, 2, 2, 1, 1, 0])
        #expect(samples.map { $0["sample"] as? Int } == Array(1...7))
        // Not a terminal: one line per sample on standard error.
        #expect(enroll.stderr.components(separatedBy: "\n").filter { $0.hasPrefix("Sample ") && $0.contains(" - ") }.count == 7)
        let id = try #require(enrolled["id"] as? String)
        #expect(enrolled["name"] as? String == "left index")

        let listed = try run(["bio", "list"]).json() as? [[String: Any]] ?? []
        #expect(listed.map { $0["id"] as? String } == [id])
        #expect(listed.map { $0["name"] as? String } == ["left index"])
        #expect(try run(["bio", "info"]).object()["enrolled"] as? Bool == true)

        let renamed = try run(["bio", "rename", id, "thumb"]).object()
        #expect(renamed["renamed"] as? String == id)
        #expect((try run(["bio", "list"]).json() as? [[String: Any]])?.first?["name"] as? String == "thumb")

        // A second enrollment after the script ran out: good samples only.
        let second = try run(["bio", "enroll"]).object()
        #expect((second["samples"] as? [[String: Any]])?.map { $0["status"] as? String } == ["good", "good", "good"])
        let secondID = try #require(second["id"] as? String)

        let unknown = try run(["bio", "delete", "AAAA", "--yes"])
        #expect(unknown.status == 1)
        #expect((try? unknown.object()["error"] as? [String: Any])?["code"] as? String == "template-not-found")
        let deleted = try run(["bio", "delete", id, "--yes"]).object()
        #expect(deleted["deleted"] as? String == id)
        let left = try run(["bio", "list"]).json() as? [[String: Any]] ?? []
        #expect(left.map { $0["id"] as? String } == [secondID])
        let badID = try run(["bio", "rename", "!!", "x"])
        #expect(badID.status == 64)
    }

    @Test func aBioFlagNeedsACTAP21Profile() throws {
        // The default profile (ctap22) takes --bio; CTAP 2.0 has no bio enrollment.
        let result = try CLIRunner.run(["virtual", "serve", "--udp", "--profile", "ctap20", "--bio"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--profile ctap22, ctap21 or ctap21-pre"))
        let badSample = try CLIRunner.run(["virtual", "serve", "--udp", "--profile", "ctap21", "--bio-samples", "good,wet"])
        #expect(badSample.status == 64)
        #expect(badSample.stderr.contains("wet"))
    }
}
