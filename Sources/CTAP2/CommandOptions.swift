import CBOR

/// The `options` parameter of makeCredential and getAssertion (CTAP 2.1 §6.1 and §6.2):
/// only the options that are set are sent.
public struct CommandOptions: Hashable, Sendable {
    /// rk: create a discoverable credential (makeCredential only).
    public var residentKey: Bool?
    /// up: require user presence.
    public var userPresence: Bool?
    /// uv: require built-in user verification (deprecated in favour of pinUvAuthParam).
    public var userVerification: Bool?

    /// Creates options.
    public init(residentKey: Bool? = nil, userPresence: Bool? = nil, userVerification: Bool? = nil) {
        self.residentKey = residentKey
        self.userPresence = userPresence
        self.userVerification = userVerification
    }

    /// Whether no option is set (the parameter is then omitted).
    public var isEmpty: Bool { residentKey == nil && userPresence == nil && userVerification == nil }

    var cbor: CBORValue {
        var m = CBORMap()
        if let residentKey { m["rk"] = .boolean(residentKey) }
        if let userPresence { m["up"] = .boolean(userPresence) }
        if let userVerification { m["uv"] = .boolean(userVerification) }
        return .map(m)
    }
}
