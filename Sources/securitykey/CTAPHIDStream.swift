import _SecurityKeyInternals
import CBOR
import CTAP2
import CTAPHID

/// Reassembles a captured stream of 64-byte CTAPHID reports into messages (CTAP 2.1 §11.2.4)
/// and decodes each one. The capture is hostile: every length and sequence number is checked.
enum CTAPHIDStream {
    static let reportSize = 64

    static func commandName(_ code: UInt8) -> String {
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

    /// One message as reassembled, with the reports it spanned.
    private struct Reassembled {
        var command: UInt8
        var data: [UInt8]
        var firstReport: Int
    }

    static func decode(_ bytes: [UInt8]) throws -> JSONValue {
        guard !bytes.isEmpty, bytes.count % reportSize == 0 else {
            throw CLIError.invalidInput(
                "A CTAPHID capture is a whole number of 64-byte reports; this one is \(bytes.count) bytes.")
        }
        // One strict assembler per channel (the CTAPHID module's, as the host uses), each with
        // the report its current message started at.
        var channels: [UInt32: (assembler: CTAPHIDMessageAssembler, firstReport: Int)] = [:]
        var messages: [JSONValue] = []
        var problems: [JSONValue] = []
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
                problems.append(.string("Report \(index) on channel \(Hex.encode(cid)): \(error.message)"))
                if error.code == .unexpectedInitialization {
                    // The unfinished message was dropped (reported above); this report starts the next.
                    state.firstReport = index
                    do { step = try state.assembler.append(report) } catch {
                        problems.append(.string("Report \(index) on channel \(Hex.encode(cid)): \(error.message)"))
                    }
                }
            }
            channels[cid] = state
            if case .complete(let message) = step {
                messages.append(
                    describe(message, cid: cid, reports: state.firstReport...index, awaiting: &awaitingResponse))
            }
        }
        for (cid, state) in channels.sorted(by: { $0.value.firstReport < $1.value.firstReport })
        where state.assembler.isAssembling {
            problems.append(
                .string("Channel \(Hex.encode(cid)): a message starting at report \(state.firstReport) is incomplete."))
        }
        return .object([
            ("reports", .integer(Int64(reportCount))),
            ("messages", .array(messages)),
            ("problems", .array(problems)),
        ])
    }

    private static func describe(
        _ message: CTAPHIDMessage, cid: UInt32, reports: ClosedRange<Int>,
        awaiting: inout [UInt32: (hid: UInt8, ctap: UInt8?)]
    ) -> JSONValue {
        let payload = message.payload
        let command = message.command.rawValue
        var direction: String
        switch command {
        case 0x3B, 0x3F: direction = "response"
        case 0x11: direction = "request"
        case 0x06: direction = payload.count == 8 ? "request" : "response"
        default: direction = awaiting[cid]?.hid == command ? "response" : "request"
        }
        var decoded: JSONValue?
        let requestCommand = awaiting[cid]?.ctap
        if direction == "request", command != 0x11 {
            awaiting[cid] = (command, command == 0x10 ? payload.first : nil)
        } else if direction == "response", command != 0x3B {
            awaiting[cid] = nil
        }
        switch command {
        case 0x10: decoded = cborMessage(payload, direction: direction, requestCommand: requestCommand)
        case 0x06 where payload.count >= 17:
            decoded = .object([
                ("nonce", .string(Hex.encode(payload[0..<8]))),
                ("channel", .string(Hex.encode(payload[8..<12]))),
                ("protocolVersion", .integer(Int64(payload[12]))),
                ("deviceVersion", .string("\(payload[13]).\(payload[14]).\(payload[15])")),
                ("capabilities", .integer(Int64(payload[16]))),
            ])
        case 0x3B where payload.count == 1:
            decoded = .object([
                (
                    "status",
                    .string(payload[0] == 1 ? "processing" : payload[0] == 2 ? "upneeded" : "\(payload[0])")
                )
            ])
        case 0x3F where payload.count == 1:
            decoded = .object([("error", .integer(Int64(payload[0])))])
        default: decoded = nil
        }
        return .members([
            ("channel", .string(Hex.encode(cid))),
            ("command", .string(commandName(command))),
            ("direction", .string(direction)),
            ("reports", .array([.integer(Int64(reports.lowerBound)), .integer(Int64(reports.upperBound))])),
            ("length", .integer(Int64(payload.count))),
            ("payload", .string(Hex.encode(payload))),
            ("decoded", decoded),
        ])
    }

    private static func cborMessage(_ payload: [UInt8], direction: String, requestCommand: UInt8?)
        -> JSONValue?
    {
        guard let first = payload.first else { return nil }
        let body = Array(payload.dropFirst())
        let diagnostic: JSONValue? =
            body.isEmpty
            ? nil
            : ((try? DecodeToJSON.lenient.decode(body)).map { .string($0.diagnosticNotation) }
                ?? "(not valid CBOR)")
        if direction == "request" {
            return .members([
                ("ctapCommand", .string(CTAP2Command(rawValue: first).description)),
                ("parameters", diagnostic),
            ])
        }
        let status = CTAPStatus(rawValue: first)
        var structured: JSONValue?
        if status == .ok, !body.isEmpty {
            switch requestCommand.map({ CTAP2Command(rawValue: $0) }) {
            case .some(.getInfo): structured = try? DecodeToJSON.decode(body, as: .getInfo)
            case .some(.makeCredential): structured = try? DecodeToJSON.decode(body, as: .makeCredentialResponse)
            case .some(.getAssertion), .some(.getNextAssertion):
                structured = try? DecodeToJSON.decode(body, as: .getAssertionResponse)
            default: structured = nil
            }
        }
        return .members([("status", .string(status.name)), ("body", diagnostic), ("response", structured)])
    }
}
