/// A relying party's sign-in options as its server sends them (WebAuthn L3 §5.1.9
/// `PublicKeyCredentialRequestOptionsJSON`), parsed strictly and within bounds; the document
/// may be wrapped as `{"publicKey": {...}}`.
public struct PublicKeyCredentialRequestOptionsJSON: WebAuthnOptionsDocument, Hashable {
    /// `challenge`.
    public var challenge: [UInt8]
    /// `timeout` in milliseconds, when given.
    public var timeoutMilliseconds: Int?
    /// `rpId`; nil means the origin's host.
    public var relyingPartyIdentifier: String?
    /// `allowCredentials` of type `public-key` (empty: a discoverable credential).
    public var allowedCredentials: [SecurityKeyCredentialDescriptor]
    /// `userVerification`.
    public var userVerification: UserVerificationPreference
    /// `hints`, as given.
    public var hints: [String]
    /// `extensions`; see ``WebAuthnExtensionInputsJSON``.
    public var extensions: WebAuthnExtensionInputsJSON

    /// Reads the options from a parsed document.
    public init(node: JSONNode) throws(WebAuthnJSONError) {
        let root = try JSONMembers.optionsRoot(node)
        challenge = try root.requiredBytes("challenge", sizes: 1...1024)
        timeoutMilliseconds = try root.integer("timeout", in: 0...Int(UInt32.max))
        relyingPartyIdentifier = try root.string("rpId")
        allowedCredentials = try PublicKeyCredentialCreationOptionsJSON.descriptors(root, "allowCredentials")
        userVerification = PublicKeyCredentialCreationOptionsJSON.userVerification(
            try root.string("userVerification"))
        hints = try PublicKeyCredentialCreationOptionsJSON.strings(root, "hints")
        extensions = try WebAuthnExtensionInputsJSON(try root.object("extensions"))
    }

    /// The provider request these options describe, for a caller at `origin` (and `topOrigin`).
    public func assertionRequest(origin: String, topOrigin: String? = nil) throws(SecurityKeyError)
        -> SecurityKeyCredentialAssertionRequest
    {
        let rpID: String
        if let relyingPartyIdentifier {
            rpID = relyingPartyIdentifier
        } else {
            rpID = try PublicKeyCredentialCreationOptionsJSON.host(of: origin)
        }
        var request = SecurityKeyCredentialAssertionRequest(
            relyingPartyIdentifier: rpID, challenge: challenge)
        request.allowedCredentials = allowedCredentials
        request.userVerificationPreference = userVerification
        request.clientData = PublicKeyCredentialCreationOptionsJSON.clientData(
            origin: origin, topOrigin: topOrigin)
        if let timeoutMilliseconds {
            request.timeout = PublicKeyCredentialCreationOptionsJSON.timeout(
                milliseconds: timeoutMilliseconds)
        }
        try extensions.apply(to: &request)
        return request
    }
}
