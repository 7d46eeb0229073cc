import _SecurityKeyInternals
import CBOR
import CTAP2
import CTAPHID

extension StructureDecoder {
    /// A capture of 64-byte CTAPHID reports (``CTAPHIDCapture``): its messages, each with its
    /// CTAPHID fields decoded (INIT, KEEPALIVE, ERROR) and its CBOR (requests' parameters,
    /// responses' bodies, getInfo / makeCredential / getAssertion replies structured), and
    /// what did not reassemble.
    static func capture(_ bytes: [UInt8]) throws -> JSONValue {
        let capture: CTAPHIDCapture
        do { capture = try CTAPHIDCapture(reassembling: bytes) } catch { throw StructureDecodingError(error.message) }
        return .object([
            ("reports", .integer(Int64(capture.reportCount))),
            ("messages", .array(capture.messages.map(describe))),
            ("problems", .array(capture.problems.map(JSONValue.string))),
        ])
    }

    private static func describe(_ message: CTAPHIDCapture.Message) -> JSONValue {
        let payload = message.payload
        let command = message.command.rawValue
        let decoded: JSONValue?
        switch command {
        case 0x10:
            decoded = cborMessage(payload, direction: message.direction, requestCommand: message.requestCTAPCommand)
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
            ("channel", .string(Hex.encode(message.channel))),
            ("command", .string(CTAPHIDCapture.commandName(command))),
            ("direction", .string(message.direction.rawValue)),
            (
                "reports",
                .array([.integer(Int64(message.reports.lowerBound)), .integer(Int64(message.reports.upperBound))])
            ),
            ("length", .integer(Int64(payload.count))),
            ("payload", .string(Hex.encode(payload))),
            ("decoded", decoded),
        ])
    }

    private static func cborMessage(
        _ payload: [UInt8], direction: CTAPHIDCapture.Direction, requestCommand: UInt8?
    ) -> JSONValue? {
        guard let first = payload.first else { return nil }
        let body = Array(payload.dropFirst())
        let diagnostic: JSONValue? =
            body.isEmpty
            ? nil
            : ((try? lenient.decode(body)).map { .string($0.diagnosticNotation) }
                ?? "(not valid CBOR)")
        if direction == .request {
            return .members([
                ("ctapCommand", .string(CTAP2Command(rawValue: first).description)),
                ("parameters", diagnostic),
            ])
        }
        let status = CTAPStatus(rawValue: first)
        var structured: JSONValue?
        if status == .ok, !body.isEmpty {
            switch requestCommand.map({ CTAP2Command(rawValue: $0) }) {
            case .some(.getInfo): structured = try? decode(body, as: .getInfo)
            case .some(.makeCredential): structured = try? decode(body, as: .makeCredentialResponse)
            case .some(.getAssertion), .some(.getNextAssertion):
                structured = try? decode(body, as: .getAssertionResponse)
            default: structured = nil
            }
        }
        return .members([("status", .string(status.name)), ("body", diagnostic), ("response", structured)])
    }
}
