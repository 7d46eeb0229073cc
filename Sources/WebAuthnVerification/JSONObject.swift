import CBOR
import FoundationEssentials

extension JSONValue {
    /// `bytes` read as JSON (FoundationEssentials' `JSONDecoder`), when they are a JSON object;
    /// nil for anything else, malformed or too deeply nested text included.
    static func object(decoding bytes: [UInt8]) -> JSONValue? {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)),
            case .object = value
        else { return nil }
        return value
    }

    /// How a member reads in a message: a string as it is, anything else as JSON text.
    var quotable: String { stringValue ?? text() }
}
