import CTAPHID

extension FuzzTarget {
    /// A capture of 64-byte CTAPHID reports (`securitykey decode --as ctaphid`) reassembled by
    /// `CTAPHIDCapture`: one strict assembler per channel, directions, and the problems found.
    ///
    /// Properties: a capture is refused exactly when it is not a whole, non-zero number of
    /// reports; each message spans reports of the capture, in order, within the CTAPHID size
    /// limit; only a response names the request it answers; the same bytes reassemble the same.
    static let ctaphidCapture = FuzzTarget(
        "ctaphid-capture", "a capture of 64-byte CTAPHID reports, reassembled into messages"
    ) {
        bytes throws(FuzzPropertyViolation) in
        let whole = !bytes.isEmpty && bytes.count % CTAPHIDCapture.reportSize == 0
        let capture: CTAPHIDCapture
        switch Result(catching: { () throws(CTAPHIDError) in try CTAPHIDCapture(reassembling: bytes) }) {
        case .success(let reassembled): capture = reassembled
        case .failure(let error):
            try expect(!whole, "a capture of \(bytes.count) bytes was refused: \(error)")
            try expect(error.code == .invalidReportSize, "a refusal coded \(error.code)")
            return
        }
        try expect(whole, "a capture of \(bytes.count) bytes was accepted")
        try expect(capture.reportCount * CTAPHIDCapture.reportSize == bytes.count, "the report count is wrong")
        // 57 bytes in the initialization report, 59 in each of 128 continuations.
        let largest = 57 + 128 * 59
        var last = -1
        for message in capture.messages {
            try expect(message.reports.lowerBound >= 0, "a message starts before the capture")
            try expect(message.reports.upperBound < capture.reportCount, "a message ends after the capture")
            try expect(message.reports.upperBound > last, "messages out of order, or two ending in one report")
            last = message.reports.upperBound
            try expect(message.payload.count <= largest, "a message of \(message.payload.count) bytes")
            try expect(
                message.direction == .response || message.requestCTAPCommand == nil,
                "a request names a request it answers")
            try expect(!CTAPHIDCapture.commandName(message.command.rawValue).isEmpty, "a command without a name")
        }
        let again = try? CTAPHIDCapture(reassembling: bytes)
        try expect(
            again?.messages.map(\.payload) == capture.messages.map(\.payload)
                && again?.problems == capture.problems,
            "the same capture reassembles differently")
    }
}
