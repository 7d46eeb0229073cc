import Foundation
import Testing

/// `decode --as ctaphid` reassembles a capture framed by python-fido2 into the messages sent.
@Suite struct DecodeCTAPHIDTests {
    static func vectorHex(_ id: String) -> String {
        Vector.all.first { $0.id == id }?.hex ?? ""
    }

    @Test func captureFramedByPythonFido2() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let info = Self.vectorHex("python-fido2/test_ctap2/module/_INFO")
        let makeCredential = Self.vectorHex("python-fido2/test_ctap2/module/_MC_RESP")
        let expected = try PythonFido2.runScript(python, "ctaphid_capture.py", [info, makeCredential])
        let capture = try #require(expected["capture"] as? String)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("capture-\(UUID()).hex")
        try Data(capture.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        // --as omitted: a hex file of whole 64-byte reports is recognised.
        let result = try CLIRunner.run(["decode", file.path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try result.object()
        #expect(json["kind"] as? String == "ctaphid")
        #expect((json["problems"] as? [Any])?.isEmpty == true)
        let messages = try #require(json["messages"] as? [[String: Any]])
        let wanted = try #require(expected["messages"] as? [[String: String]])
        #expect(messages.count == wanted.count)
        for (got, want) in zip(messages, wanted) {
            #expect(got["channel"] as? String == want["channel"])
            #expect(got["command"] as? String == want["command"])
            #expect(got["payload"] as? String == want["payload"])
        }
        // The getInfo reply is decoded as such, with python-fido2's AAGUID.
        let infoReply = messages.first { ($0["decoded"] as? [String: Any])?["response"] != nil }
        let decoded = (infoReply?["decoded"] as? [String: Any])?["response"] as? [String: Any]
        #expect(decoded?["kind"] as? String == "get-info")
        #expect(decoded?["aaguid"] as? String == expected["aaguid"] as? String)
    }

    @Test func brokenSequenceIsReported() throws {
        // An init report announcing 100 bytes, then a continuation with sequence 5 instead of 0.
        let initReport = "0a0b0c0d900064" + String(repeating: "11", count: 57)
        let continuation = "0a0b0c0d05" + String(repeating: "22", count: 59)
        let result = try CLIRunner.run([
            "decode", "--as", "ctaphid", "--hex", initReport + continuation, "--json",
        ])
        #expect(result.status == 0)
        let json = try result.object()
        #expect((json["messages"] as? [Any])?.isEmpty == true)
        #expect((json["problems"] as? [String])?.count == 1)
    }
}
