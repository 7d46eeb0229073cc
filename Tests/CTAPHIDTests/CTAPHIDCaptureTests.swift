import Testing

import CTAPHID

/// A recorded stream of reports, laid out by hand per CTAP 2.1 §11.2.4 (CID, CMD|0x80, BCNTH,
/// BCNTL, data; continuations CID, SEQ, data), reassembled as `decode --as ctaphid` does.
@Suite struct CTAPHIDCaptureTests {
    static func report(_ hex: String) -> [UInt8] {
        var bytes = Hex.decode(hex)
        bytes.append(contentsOf: repeatElement(0, count: 64 - bytes.count))
        return bytes
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }

    @Test func requestsAndResponsesAcrossReports() throws {
        let pingData = (0..<100).map { UInt8($0) }
        let ping =
            Self.report("00000007" + "81" + "0064" + Self.hex(pingData[0..<57]))
            + Self.report("00000007" + "00" + Self.hex(pingData[57...]))
        let capture = try CTAPHIDCapture(
            reassembling:
                Self.report("ffffffff" + "86" + "0008" + "0102030405060708")
                + Self.report("ffffffff" + "86" + "0011" + "0102030405060708" + "00000007" + "0205040302")
                + ping + ping
                + Self.report("00000007" + "90" + "0001" + "04")
                + Self.report("00000007" + "bb" + "0001" + "02")
                + Self.report("00000007" + "90" + "0002" + "0000"))
        #expect(capture.reportCount == 9)
        #expect(capture.problems.isEmpty)
        let messages = capture.messages
        try #require(messages.count == 7)
        #expect(
            messages.map(\.direction) == [.request, .response, .request, .response, .request, .response, .response])
        #expect(messages[2].payload == pingData)
        #expect(messages[2].reports == 2...3)
        #expect(messages[3].reports == 4...5)
        #expect(messages[4].requestCTAPCommand == nil)
        // The CBOR response names the CTAP command of its request (authenticatorGetInfo, 0x04).
        #expect(messages[6].requestCTAPCommand == 0x04)
        #expect(messages[6].channel == 7)
        #expect(CTAPHIDCapture.commandName(messages[5].command.rawValue) == "CTAPHID_KEEPALIVE")
    }

    @Test func brokenSequencesAreProblemsNotFailures() throws {
        let capture = try CTAPHIDCapture(
            reassembling:
                Self.report("00000007" + "81" + "0064" + "aa")
                + Self.report("00000007" + "05" + "bb")
                + Self.report("00000009" + "81" + "0100" + "cc"))
        #expect(capture.messages.isEmpty)
        #expect(capture.problems.contains { $0.hasPrefix("Report 1 on channel 00000007: ") })
        #expect(capture.problems.contains("Channel 00000009: a message starting at report 2 is incomplete."))
    }

    @Test(arguments: [0, 63, 65, 130])
    func partialReportsAreRefused(_ count: Int) {
        #expect(throws: CTAPHIDError.self) {
            try CTAPHIDCapture(reassembling: [UInt8](repeating: 0, count: count))
        }
    }
}
