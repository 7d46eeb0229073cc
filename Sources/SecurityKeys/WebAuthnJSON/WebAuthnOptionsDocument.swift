/// A WebAuthn options document a relying party's server sends (creation or request options),
/// read from a parsed JSON node; JSON text is parsed through ``init(json:limits:)``.
public protocol WebAuthnOptionsDocument: Sendable {
    /// Reads the options from a parsed document.
    init(node: JSONNode) throws(WebAuthnJSONError)
}

extension WebAuthnOptionsDocument {
    /// Parses the options from JSON text, within `limits`.
    public init(json: [UInt8], limits: JSONLimits = .webAuthnOptions) throws(SecurityKeyError) {
        do throws(WebAuthnJSONError) {
            try self.init(node: try JSONNode.parse(json, limits: limits))
        } catch {
            throw SecurityKeyError(error)
        }
    }
}

extension JSONMembers {
    /// The options object of a document: the root itself, or its `publicKey` member when the
    /// server wrapped the options as `navigator.credentials` takes them (`{"publicKey": {...}}`).
    static func optionsRoot(_ node: JSONNode) throws(WebAuthnJSONError) -> JSONMembers {
        let root = try JSONMembers(node, path: "")
        return try root.object("publicKey") ?? root
    }
}
