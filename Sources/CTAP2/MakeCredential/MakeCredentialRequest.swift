import CBOR

/// The parameters of authenticatorMakeCredential (CTAP 2.2 §6.1).
public struct MakeCredentialRequest: CTAP2Request, Hashable {
    /// SHA-256 of the serialized client data (32 bytes).
    public var clientDataHash: [UInt8]
    /// The relying party.
    public var rp: RelyingPartyEntity
    /// The user account.
    public var user: UserEntity
    /// Acceptable credential types and algorithms, preferred first.
    public var pubKeyCredParams: [PublicKeyCredentialParameters]
    /// Credentials that must not be registered again.
    public var excludeList: [PublicKeyCredentialDescriptor]?
    /// Authenticator extension inputs, by extension identifier.
    public var extensions: CBORMap?
    /// rk / up / uv options.
    public var options: CommandOptions?
    /// The PIN/UV auth parameter, where a pinUvAuthToken is used.
    public var pinUVAuthParam: [UInt8]?
    /// The PIN/UV auth protocol version of ``pinUVAuthParam``.
    public var pinUVAuthProtocol: UInt64?
    /// Requests enterprise attestation (1: vendor-facilitated, 2: platform-managed).
    public var enterpriseAttestation: UInt64?
    /// Attestation statement formats the platform prefers, most preferred first.
    public var attestationFormatsPreference: [String]?

    /// Creates a request.
    public init(
        clientDataHash: [UInt8], rp: RelyingPartyEntity, user: UserEntity,
        pubKeyCredParams: [PublicKeyCredentialParameters],
        excludeList: [PublicKeyCredentialDescriptor]? = nil, extensions: CBORMap? = nil,
        options: CommandOptions? = nil, pinUVAuthParam: [UInt8]? = nil, pinUVAuthProtocol: UInt64? = nil,
        enterpriseAttestation: UInt64? = nil, attestationFormatsPreference: [String]? = nil
    ) {
        self.clientDataHash = clientDataHash
        self.rp = rp
        self.user = user
        self.pubKeyCredParams = pubKeyCredParams
        self.excludeList = excludeList
        self.extensions = extensions
        self.options = options
        self.pinUVAuthParam = pinUVAuthParam
        self.pinUVAuthProtocol = pinUVAuthProtocol
        self.enterpriseAttestation = enterpriseAttestation
        self.attestationFormatsPreference = attestationFormatsPreference
    }
}

extension MakeCredentialRequest {
    /// authenticatorMakeCredential.
    public var command: CTAP2Command { .makeCredential }
    /// The decoded reply.
    public typealias Response = MakeCredentialResponse

    /// Refuses what the spec forbids before anything is sent.
    public func validate() throws(CTAP2Error) {
        guard clientDataHash.count == 32 else {
            throw CTAP2Error(
                .invalidRequest, "The client data hash must be 32 bytes, not \(clientDataHash.count).")
        }
        guard user.id.count <= 64 else {
            throw CTAP2Error(.invalidRequest, "The user ID must be at most 64 bytes, not \(user.id.count).")
        }
        guard !pubKeyCredParams.isEmpty else {
            throw CTAP2Error(.invalidRequest, "At least one credential algorithm must be offered.")
        }
    }
}

extension CTAP2Command {
    /// authenticatorMakeCredential (§6.1).
    public static let makeCredential = CTAP2Command(0x01, name: "authenticatorMakeCredential")
}
