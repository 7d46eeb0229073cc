/// The `extensions` member of WebAuthn JSON options (`AuthenticationExtensionsClientInputsJSON`,
/// WebAuthn L3 §5.1.8–9): each client extension input by identifier, type-checked for the
/// extensions this library knows, kept as parsed JSON.
///
/// Unknown extensions are ignored, as WebAuthn L3 §9 tells clients to do.
public struct WebAuthnExtensionInputsJSON: Hashable, Sendable {
    /// The inputs by identifier, as parsed (`appid`, `credProps`, `prf`, `credBlob`, ...).
    public var inputs: [String: JSONNode]

    /// No extensions.
    public init() { inputs = [:] }

    /// Reads and type-checks `extensions` (nil: none given).
    init(_ object: JSONMembers?) throws(WebAuthnJSONError) {
        inputs = [:]
        guard let object else { return }
        for (name, value) in object.members {
            let path = object.memberPath(name)
            switch name {
            case "appid", "appidExclude":
                guard case .string = value else { throw JSONMembers.wrongType(path, "a string", value) }
            case "credProps", "hmacCreateSecret", "minPinLength", "getCredBlob":
                guard case .bool = value else { throw JSONMembers.wrongType(path, "a boolean", value) }
            case "credBlob":
                _ = try JSONMembers.bytes(value, path: path, sizes: 1...1024)
            case "credentialProtectionPolicy":
                guard case .string = value else { throw JSONMembers.wrongType(path, "a string", value) }
            case "enforceCredentialProtectionPolicy":
                guard case .bool = value else { throw JSONMembers.wrongType(path, "a boolean", value) }
            case "prf", "largeBlob":
                _ = try JSONMembers(value, path: path)
            default: break
            }
            inputs[name] = value
        }
    }

    // MARK: Mapping to the provider's request
    //
    // TO COMPLETE after the typed extension inputs land in SecurityKeys: map `credProps`,
    // `prf` (eval/evalByCredential, base64url salts), `credBlob`/`getCredBlob`, `largeBlob`,
    // `minPinLength`, `credentialProtectionPolicy` to the typed inputs, and their outputs into
    // the response JSON's `clientExtensionResults`. Until then only what the provider's current
    // API carries is passed on (the FIDO AppID extension on sign-in); the others are
    // validated above and otherwise ignored, which WebAuthn allows a client to do.

    /// Passes the registration inputs the provider supports on to `request`.
    func apply(to request: inout SecurityKeyCredentialRegistrationRequest) throws(SecurityKeyError) {
        _ = request
    }

    /// Passes the sign-in inputs the provider supports on to `request`.
    func apply(to request: inout SecurityKeyCredentialAssertionRequest) throws(SecurityKeyError) {
        if case .string(let appID) = inputs["appid"] { request.appID = appID }
    }
}
