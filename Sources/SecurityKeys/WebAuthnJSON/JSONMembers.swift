import _SecurityKeyInternals

/// Typed access to one JSON object's members, each error naming the member's path.
struct JSONMembers {
    let path: String
    let members: [(String, JSONNode)]

    /// The object at `path`, or a wrong-type error naming it.
    init(_ node: JSONNode, path: String) throws(WebAuthnJSONError) {
        guard case .object(let members) = node else { throw Self.wrongType(path, "an object", node) }
        self.path = path
        self.members = members
    }

    func memberPath(_ name: String) -> String { path.isEmpty ? name : path + "." + name }

    static func wrongType(_ path: String, _ expected: String, _ node: JSONNode) -> WebAuthnJSONError {
        WebAuthnJSONError(.wrongType, member: path, "\(path) must be \(expected), not \(node.typeName).")
    }

    static func invalid(_ path: String, _ why: String) -> WebAuthnJSONError {
        WebAuthnJSONError(.invalidValue, member: path, "\(path) \(why).")
    }

    /// The member's value; absent and `null` both count as absent (WebAuthn's JSON leaves
    /// optional members out, and some servers write them as null).
    func optional(_ name: String) -> JSONNode? {
        guard let value = members.first(where: { $0.0 == name })?.1 else { return nil }
        if case .null = value { return nil }
        return value
    }

    func required(_ name: String) throws(WebAuthnJSONError) -> JSONNode {
        guard let value = optional(name) else {
            throw WebAuthnJSONError(
                .missingMember, member: memberPath(name), "\(memberPath(name)) is required.")
        }
        return value
    }

    func string(_ name: String) throws(WebAuthnJSONError) -> String? {
        guard let value = optional(name) else { return nil }
        guard case .string(let text) = value else {
            throw Self.wrongType(memberPath(name), "a string", value)
        }
        return text
    }

    func requiredString(_ name: String) throws(WebAuthnJSONError) -> String {
        let value = try required(name)
        guard case .string(let text) = value else {
            throw Self.wrongType(memberPath(name), "a string", value)
        }
        return text
    }

    func bool(_ name: String) throws(WebAuthnJSONError) -> Bool? {
        guard let value = optional(name) else { return nil }
        guard case .bool(let flag) = value else { throw Self.wrongType(memberPath(name), "a boolean", value) }
        return flag
    }

    /// An integer member within `range` (JSON numbers such as `-7` or `60000`; a fraction or
    /// exponent is refused).
    func integer(_ name: String, in range: ClosedRange<Int>) throws(WebAuthnJSONError) -> Int? {
        guard let value = optional(name) else { return nil }
        return try Self.integer(value, path: memberPath(name), in: range)
    }

    static func integer(_ value: JSONNode, path: String, in range: ClosedRange<Int>) throws(WebAuthnJSONError)
        -> Int
    {
        guard case .number(let text) = value else { throw wrongType(path, "an integer", value) }
        guard let number = Int(text) else { throw invalid(path, "must be an integer, not \(text)") }
        guard range.contains(number) else {
            throw invalid(path, "must be between \(range.lowerBound) and \(range.upperBound), not \(number)")
        }
        return number
    }

    /// A base64url member (WebAuthn's encoding of binary members) of `sizes` bytes.
    func bytes(_ name: String, sizes: ClosedRange<Int>) throws(WebAuthnJSONError) -> [UInt8]? {
        guard let value = optional(name) else { return nil }
        return try Self.bytes(value, path: memberPath(name), sizes: sizes)
    }

    func requiredBytes(_ name: String, sizes: ClosedRange<Int>) throws(WebAuthnJSONError) -> [UInt8] {
        try Self.bytes(try required(name), path: memberPath(name), sizes: sizes)
    }

    static func bytes(_ value: JSONNode, path: String, sizes: ClosedRange<Int>) throws(WebAuthnJSONError)
        -> [UInt8]
    {
        guard case .string(let text) = value else { throw wrongType(path, "a base64url string", value) }
        guard let bytes = Base64URL.decode(text) else { throw invalid(path, "is not base64url") }
        guard sizes.contains(bytes.count) else {
            throw invalid(
                path, "must be \(sizes.lowerBound) to \(sizes.upperBound) bytes, not \(bytes.count)")
        }
        return bytes
    }

    func array(_ name: String) throws(WebAuthnJSONError) -> [JSONNode]? {
        guard let value = optional(name) else { return nil }
        guard case .array(let values) = value else {
            throw Self.wrongType(memberPath(name), "an array", value)
        }
        return values
    }

    func object(_ name: String) throws(WebAuthnJSONError) -> JSONMembers? {
        guard let value = optional(name) else { return nil }
        return try JSONMembers(value, path: memberPath(name))
    }
}
