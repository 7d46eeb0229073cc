/// A WebAuthn response JSON document (RegistrationResponseJSON or AuthenticationResponseJSON,
/// WebAuthn L3 §5.1, as `securitykey register --json` and browsers write them), read
/// defensively by ``PublicKeyCredentialJSON``'s parser: members are looked up by path and
/// type-checked where they are used.
public struct WebAuthnResponseDocument: Sendable {
    let root: JSONNode
    /// The name the document is reported by (a file path).
    public let path: String

    /// Parses `bytes`, named `path` in errors.
    public init(_ bytes: [UInt8], path: String) throws(StructureDecodingError) {
        self.path = path
        guard let root = try? PublicKeyCredentialJSON.parse(bytes) else {
            throw StructureDecodingError("\(path) is not a JSON object.")
        }
        self.root = root
    }

    /// The top-level string member `key`.
    public func string(_ key: String) -> String? { string([key]) }

    /// The string member at `keys`.
    func string(_ keys: [String]) -> String? {
        guard case .string(let text) = value(keys) else { return nil }
        return text
    }

    /// Whether the member at `keys` is an object.
    func isObject(_ keys: [String]) -> Bool {
        guard case .object = value(keys) else { return false }
        return true
    }

    /// Whether the member at `keys` (a path of object members) is there.
    public func has(_ keys: [String]) -> Bool { value(keys) != nil }

    /// The member at `keys`, `null` included.
    func value(_ keys: [String]) -> JSONNode? {
        var current: JSONNode? = root
        for key in keys {
            guard case .object(let members) = current else { return nil }
            current = members.first { $0.0 == key }?.1
        }
        return current
    }

    /// The base64url member at `keys`, decoded.
    public func binary(_ keys: [String]) throws(StructureDecodingError) -> [UInt8] {
        let name = keys.joined(separator: ".")
        guard let value = value(keys) else { throw StructureDecodingError("\(path) lacks \(name).") }
        switch Result(catching: { () throws(WebAuthnJSONError) in
            try JSONMembers.bytes(value, path: name, sizes: PublicKeyCredentialJSON.anySize)
        }) {
        case .success(let bytes): return bytes
        case .failure(let error) where error.code == .wrongType: throw StructureDecodingError("\(path) lacks \(name).")
        case .failure: throw StructureDecodingError("\(name) in \(path) is not base64url.")
        }
    }
}
