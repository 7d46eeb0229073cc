import _SecurityKeyInternals

/// A captured stream of 64-byte CTAPHID reports (a usbmon or UDP recording) reassembled into
/// messages (CTAP 2.1 §11.2.4), each with its channel, direction and the reports it spanned.
///
/// The capture is hostile: every length and sequence number is checked by the same strict
/// ``CTAPHIDMessageAssembler`` the host uses (one per channel), and what does not reassemble
/// is listed in ``problems`` instead of stopping the decoding.
public struct CTAPHIDCapture: Sendable {
    /// The report size of a capture.
    public static let reportSize = 64

    /// Which way a message went.
    public enum Direction: String, Hashable, Sendable {
        /// Host to key.
        case request
        /// Key to host.
        case response
    }

    /// One reassembled message.
    public struct Message: Sendable {
        /// The channel it was sent on.
        public var channel: UInt32
        /// The CTAPHID command.
        public var command: CTAPHIDCommand
        /// Which way it went: INIT by its payload's length, KEEPALIVE and ERROR as responses,
        /// CANCEL as a request, any other as the response to the channel's open request of
        /// the same command, else a request.
        public var direction: Direction
        /// The first and the last report (indices into the capture) it spanned.
        public var reports: ClosedRange<Int>
        /// The reassembled payload.
        public var payload: [UInt8]
        /// For a response: the first payload byte (the CTAP command) of the CTAPHID_CBOR request
        /// it answers, when that request was a CTAPHID_CBOR one.
        public var requestCTAPCommand: UInt8?
    }

    /// How many reports the capture holds.
    public var reportCount: Int
    /// The messages, in the order their last report came.
    public var messages: [Message]
    /// What did not reassemble, one sentence each.
    public var problems: [String]

    /// Reassembles `bytes`, which must be a whole, non-zero number of 64-byte reports.
    public init(reassembling bytes: [UInt8]) throws(CTAPHIDError) {
        let reportSize = Self.reportSize
        guard !bytes.isEmpty, bytes.count % reportSize == 0 else {
            throw CTAPHIDError(
                .invalidReportSize,
                "A CTAPHID capture is a whole number of 64-byte reports; this one is \(bytes.count) bytes.")
        }
        // One strict assembler per channel, each with the report its current message started at.
        var channels: [UInt32: (assembler: CTAPHIDMessageAssembler, firstReport: Int)] = [:]
        var messages: [Message] = []
        var problems: [String] = []
        var awaitingResponse: [UInt32: (hid: UInt8, ctap: UInt8?)] = [:]
        let reportCount = bytes.count / reportSize
        for index in 0..<reportCount {
            let report = Array(bytes[(index * reportSize)..<((index + 1) * reportSize)])
            guard let cid = CTAPHIDPacket.channel(of: report) else { continue }
            var state = channels[cid] ?? (CTAPHIDMessageAssembler(channel: cid, reportSize: reportSize), index)
            if !state.assembler.isAssembling { state.firstReport = index }
            var step = CTAPHIDMessageAssembler.Step.ignored
            do {
                step = try state.assembler.append(report)
            } catch {
                problems.append("Report \(index) on channel \(Hex.encode(cid)): \(error.message)")
                if error.code == .unexpectedInitialization {
                    // The unfinished message was dropped (reported above); this report starts the next.
                    state.firstReport = index
                    do { step = try state.assembler.append(report) } catch {
                        problems.append("Report \(index) on channel \(Hex.encode(cid)): \(error.message)")
                    }
                }
            }
            channels[cid] = state
            if case .complete(let message) = step {
                messages.append(
                    Self.place(message, cid: cid, reports: state.firstReport...index, awaiting: &awaitingResponse))
            }
        }
        for (cid, state) in channels.sorted(by: { $0.value.firstReport < $1.value.firstReport })
        where state.assembler.isAssembling {
            problems.append("Channel \(Hex.encode(cid)): a message starting at report \(state.firstReport) is incomplete.")
        }
        self.reportCount = reportCount
        self.messages = messages
        self.problems = problems
    }

    /// The spec's name of a CTAPHID command (`CTAPHID_CBOR`; `CTAPHID_VENDOR_0x41` for vendor ones).
    public static func commandName(_ code: UInt8) -> String {
        switch code {
        case 0x01: "CTAPHID_PING"
        case 0x03: "CTAPHID_MSG"
        case 0x04: "CTAPHID_LOCK"
        case 0x06: "CTAPHID_INIT"
        case 0x08: "CTAPHID_WINK"
        case 0x10: "CTAPHID_CBOR"
        case 0x11: "CTAPHID_CANCEL"
        case 0x3B: "CTAPHID_KEEPALIVE"
        case 0x3F: "CTAPHID_ERROR"
        default:
            code >= 0x40
                ? "CTAPHID_VENDOR_0x\(String(code, radix: 16))" : "CTAPHID_0x\(String(code, radix: 16))"
        }
    }

    /// Gives a message its direction and, for a response, the request it answers.
    private static func place(
        _ message: CTAPHIDMessage, cid: UInt32, reports: ClosedRange<Int>,
        awaiting: inout [UInt32: (hid: UInt8, ctap: UInt8?)]
    ) -> Message {
        let payload = message.payload
        let command = message.command.rawValue
        let direction: Direction
        switch command {
        case 0x3B, 0x3F: direction = .response
        case 0x11: direction = .request
        case 0x06: direction = payload.count == 8 ? .request : .response
        default: direction = awaiting[cid]?.hid == command ? .response : .request
        }
        let requestCommand = awaiting[cid]?.ctap
        if direction == .request, command != 0x11 {
            awaiting[cid] = (command, command == 0x10 ? payload.first : nil)
        } else if direction == .response, command != 0x3B {
            awaiting[cid] = nil
        }
        return Message(
            channel: cid, command: message.command, direction: direction, reports: reports, payload: payload,
            requestCTAPCommand: direction == .response ? requestCommand : nil)
    }
}
