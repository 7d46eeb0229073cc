import FoundationEssentials

/// A relying party's registration options as its server sends them (WebAuthn L3 §5.1.8
/// `PublicKeyCredentialCreationOptionsJSON`): binary members base64url, parsed strictly and
/// within bounds, every error naming the member.
///
/// The document may be the options themselves or wrapped as `{"publicKey": {...}}` (the
/// `CredentialCreationOptions` shape servers such as python-fido2's `Fido2Server` send).
public struct PublicKeyCredentialCreationOptionsJSON: WebAuthnOptionsDocument, Hashable {
    /// `rp.id`; nil means the origin's host (WebAuthn L3 §5.1.3 step 8).
    public var relyingPartyIdentifier: String?
    /// `rp.name`.
    public var relyingPartyName: String
    /// `user.id`, 1 to 64 bytes.
    public var userID: [UInt8]
    /// `user.name`.
    public var userName: String
    /// `user.displayName`.
    public var userDisplayName: String
    /// `challenge`.
    public var challenge: [UInt8]
    /// `pubKeyCredParams` of type `public-key`, in order (empty: the WebAuthn default ES256, RS256).
    public var credentialParameters: [SecurityKeyAlgorithm]
    /// `timeout` in milliseconds, when given.
    public var timeoutMilliseconds: Int?
    /// `excludeCredentials` of type `public-key`.
    public var excludedCredentials: [SecurityKeyCredentialDescriptor]
    /// `authenticatorSelection.authenticatorAttachment`, when given.
    public var authenticatorAttachment: String?
    /// `authenticatorSelection.residentKey` (or `requireResidentKey`), resolved as §5.4.4 says.
    public var residentKey: ResidentKeyPreference
    /// `authenticatorSelection.userVerification`.
    public var userVerification: UserVerificationPreference
    /// `attestation`.
    public var attestation: AttestationConveyancePreference
    /// `hints` (`security-key`, `client-device`, `hybrid`), as given.
    public var hints: [String]
    /// `attestationFormats` (WebAuthn L3 §5.4): the attestation formats the relying party prefers, best first.
    public var attestationFormats: [String] = []
    /// `extensions`: client extension inputs by identifier, as parsed JSON; see
    /// ``WebAuthnExtensionInputsJSON``.
    public var extensions: WebAuthnExtensionInputsJSON

    /// Reads the options from a parsed document.
    public init(node: JSONNode) throws(WebAuthnJSONError) {
        let root = try JSONMembers.optionsRoot(node)
        let rp = try JSONMembers(try root.required("rp"), path: root.memberPath("rp"))
        relyingPartyIdentifier = try rp.string("id")
        relyingPartyName = try rp.string("name") ?? ""
        let user = try JSONMembers(try root.required("user"), path: root.memberPath("user"))
        userID = try user.requiredBytes("id", sizes: 1...64)
        userName = try user.requiredString("name")
        userDisplayName = try user.string("displayName") ?? ""
        challenge = try root.requiredBytes("challenge", sizes: 1...1024)

        var algorithms: [SecurityKeyAlgorithm] = []
        let params = try root.array("pubKeyCredParams") ?? []
        for (index, entry) in params.enumerated() {
            let param = try JSONMembers(entry, path: root.memberPath("pubKeyCredParams") + "[\(index)]")
            let type = try param.requiredString("type")
            let alg = try param.integer("alg", in: Int(Int32.min)...Int(Int32.max))
            guard let alg else {
                throw WebAuthnJSONError(
                    .missingMember, member: param.memberPath("alg"), "\(param.memberPath("alg")) is required."
                )
            }
            // §5.4 step 10: entries of unknown types are skipped.
            if type == "public-key" { algorithms.append(SecurityKeyAlgorithm(rawValue: alg)) }
        }
        if !params.isEmpty, algorithms.isEmpty {
            throw JSONMembers.invalid(root.memberPath("pubKeyCredParams"), "names no public-key algorithm")
        }
        credentialParameters = algorithms
        timeoutMilliseconds = try root.integer("timeout", in: 0...Int(UInt32.max))
        excludedCredentials = try Self.descriptors(root, "excludeCredentials")

        let selection = try root.object("authenticatorSelection")
        authenticatorAttachment = try selection?.string("authenticatorAttachment")
        let requireResidentKey = try selection?.bool("requireResidentKey") ?? false
        // §5.4.4: unknown values are ignored; residentKey wins over requireResidentKey.
        switch try selection?.string("residentKey") {
        case "required": residentKey = .required
        case "preferred": residentKey = .preferred
        case "discouraged": residentKey = .discouraged
        default: residentKey = requireResidentKey ? .required : .discouraged
        }
        userVerification = Self.userVerification(try selection?.string("userVerification"))
        switch try root.string("attestation") {
        case "direct": attestation = .direct
        case "indirect": attestation = .indirect
        case "enterprise": attestation = .enterprise
        default: attestation = .none
        }
        hints = try Self.strings(root, "hints")
        attestationFormats = try Self.strings(root, "attestationFormats")
        extensions = try WebAuthnExtensionInputsJSON(try root.object("extensions"))
    }

    /// The provider request these options describe, for a caller at `origin` (and, in a frame,
    /// `topOrigin`); the RP ID is checked against the origin when the request is performed.
    public func registrationRequest(origin: String, topOrigin: String? = nil) throws(SecurityKeyError)
        -> SecurityKeyCredentialRegistrationRequest
    {
        guard authenticatorAttachment != "platform" else {
            throw SecurityKeyError(
                .notHandled,
                "The relying party asked for a platform authenticator; only security keys are offered.")
        }
        let rpID: String
        if let relyingPartyIdentifier {
            rpID = relyingPartyIdentifier
        } else {
            rpID = try Self.host(of: origin)
        }
        var request = SecurityKeyCredentialRegistrationRequest(
            relyingPartyIdentifier: rpID, challenge: challenge, displayName: userDisplayName,
            name: userName, userID: userID)
        request.relyingPartyName = relyingPartyName.isEmpty ? nil : relyingPartyName
        request.credentialParameters = credentialParameters.isEmpty ? [.es256, .rs256] : credentialParameters
        request.excludedCredentials = excludedCredentials
        request.residentKeyPreference = residentKey
        request.userVerificationPreference = userVerification
        request.attestationPreference = attestation
        request.attestationFormats = attestationFormats
        request.clientData = Self.clientData(origin: origin, topOrigin: topOrigin)
        if let timeoutMilliseconds { request.timeout = Self.timeout(milliseconds: timeoutMilliseconds) }
        try extensions.apply(to: &request)
        return request
    }

    // MARK: Shared with the request options

    static func descriptors(_ root: JSONMembers, _ name: String) throws(WebAuthnJSONError)
        -> [SecurityKeyCredentialDescriptor]
    {
        var out: [SecurityKeyCredentialDescriptor] = []
        for (index, entry) in (try root.array(name) ?? []).enumerated() {
            let item = try JSONMembers(entry, path: root.memberPath(name) + "[\(index)]")
            let type = try item.requiredString("type")
            // Credential IDs are at most 1023 bytes (WebAuthn L3 §4 "Credential ID").
            let id = try item.requiredBytes("id", sizes: 1...1023)
            let transports = try strings(item, "transports").map(SecurityKeyTransport.init(rawValue:))
            if type == "public-key" {
                out.append(SecurityKeyCredentialDescriptor(credentialID: id, transports: transports))
            }
        }
        return out
    }

    static func strings(_ root: JSONMembers, _ name: String) throws(WebAuthnJSONError) -> [String] {
        var out: [String] = []
        for (index, entry) in (try root.array(name) ?? []).enumerated() {
            guard case .string(let text) = entry else {
                throw JSONMembers.wrongType(root.memberPath(name) + "[\(index)]", "a string", entry)
            }
            out.append(text)
        }
        return out
    }

    static func userVerification(_ text: String?) -> UserVerificationPreference {
        switch text {
        case "required": .required
        case "discouraged": .discouraged
        default: .preferred
        }
    }

    /// The origin's host, the RP ID when the options name none.
    static func host(of origin: String) throws(SecurityKeyError) -> String {
        guard let host = URLComponents(string: origin)?.host, !host.isEmpty else {
            throw SecurityKeyError(
                .invalidOrigin, "The origin \"\(origin)\" is not of the form https://host[:port].")
        }
        return host.lowercased()
    }

    static func clientData(origin: String, topOrigin: String?) -> SecurityKeyClientData {
        // A top origin equal to the origin is a top-level request, not a cross-origin frame.
        if let topOrigin, !topOrigin.isEmpty, topOrigin != origin {
            return .origin(origin, crossOrigin: true, topOrigin: topOrigin)
        }
        return .origin(origin)
    }

    /// The relying party's timeout, kept within the range WebAuthn L3 §5.4 recommends
    /// clients enforce (here 10 s to 10 min).
    static func timeout(milliseconds: Int) -> Duration {
        .milliseconds(min(max(milliseconds, 10_000), 600_000))
    }
}

extension SecurityKeyError {
    /// A JSON rejection as the provider's error: code `invalid-request`, the JSON error underneath.
    init(_ error: WebAuthnJSONError) {
        self.init(.invalidRequest, error.message, underlying: error)
    }

    /// The JSON rejection underneath, when this error is one.
    public var webAuthnJSONError: WebAuthnJSONError? { underlying as? WebAuthnJSONError }
}
