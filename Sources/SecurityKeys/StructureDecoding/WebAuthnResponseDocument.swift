import _SecurityKeyInternals
import Foundation

/// A WebAuthn response JSON document (RegistrationResponseJSON or AuthenticationResponseJSON,
/// WebAuthn L3 §5.1, as `securitykey register --json` and browsers write them), read
/// defensively: members are looked up by path and type-checked where they are used.
public struct WebAuthnResponseDocument: @unchecked Sendable {
    // JSONSerialization's values are immutable here (never mutated after parsing).
    let root: [String: Any]
    /// The name the document is reported by (a file path).
    public let path: String

    /// Parses `bytes`, named `path` in errors.
    public init(_ bytes: [UInt8], path: String) throws(StructureDecodingError) {
        self.path = path
        guard let root = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw StructureDecodingError("\(path) is not a JSON object.")
        }
        self.root = root
    }

    /// The top-level string member `key`.
    public func string(_ key: String) -> String? { root[key] as? String }

    /// Whether the member at `keys` (a path of object members) is there.
    public func has(_ keys: [String]) -> Bool { value(keys) != nil }

    private func value(_ keys: [String]) -> Any? {
        var current: Any? = root
        for key in keys { current = (current as? [String: Any])?[key] }
        return current
    }

    /// The base64url member at `keys`, decoded.
    public func binary(_ keys: [String]) throws(StructureDecodingError) -> [UInt8] {
        guard let text = value(keys) as? String else {
            throw StructureDecodingError("\(path) lacks \(keys.joined(separator: ".")).")
        }
        guard let bytes = Base64URL.decode(text) else {
            throw StructureDecodingError("\(keys.joined(separator: ".")) in \(path) is not base64url.")
        }
        return bytes
    }
}
