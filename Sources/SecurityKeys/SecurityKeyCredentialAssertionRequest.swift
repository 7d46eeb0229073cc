import CBOR

/// A request to sign in with a credential on a security key (WebAuthn L3 §5.5
/// `PublicKeyCredentialRequestOptions`; AuthenticationServices'
/// `ASAuthorizationSecurityKeyPublicKeyCredentialAssertionRequest`).
public struct SecurityKeyCredentialAssertionRequest: Hashable, Sendable {
    /// The relying party identifier.
    public var relyingPartyIdentifier: String
    /// The relying party's challenge.
    public var challenge: [UInt8]
    /// Credentials the relying party accepts; empty asks for a discoverable credential.
    public var allowedCredentials: [SecurityKeyCredentialDescriptor] = []
    /// Whether the user should be verified.
    public var userVerificationPreference: UserVerificationPreference = .preferred
    /// A legacy U2F AppID (FIDO AppID extension, WebAuthn L3 §10.1.1) tried when no allowed
    /// credential is found under the relying party identifier.
    public var appID: String?
    /// `prf` (WebAuthn L3 §10.1.4): values to evaluate the credential's PRF on.
    public var prf: SecurityKeyPRFAssertionInput?
    /// `hmacGetSecret` (CTAP 2.2 §12.5): raw hmac-secret salts, used as they are.
    public var hmacGetSecret: SecurityKeyHMACSecretInput?
    /// `getCredBlob` (CTAP 2.2 §12.2): read the blob stored with the credential.
    public var getCredentialBlob = false
    /// `largeBlob` (WebAuthn L3 §10.1.5): read the credential's large blob, or write one.
    public var largeBlob: SecurityKeyLargeBlobAssertionInput?
    /// Other CTAP authenticator extension inputs by identifier (CTAP 2.2 §12), sent as given:
    /// the raw escape hatch. The typed members above win over the same identifiers here.
    public var additionalExtensionInputs: CBORMap = CBORMap()
    /// The raw extension inputs under their former name.
    @available(*, deprecated, renamed: "additionalExtensionInputs")
    public var extensionInputs: CBORMap {
        get { additionalExtensionInputs }
        set { additionalExtensionInputs = newValue }
    }
    /// The client data, built from an origin by default (`https://` + the RP ID).
    public var clientData: SecurityKeyClientData
    /// How long the whole request may take, including the user's touch and PIN.
    public var timeout: Duration = .seconds(120)

    /// Creates a request; see ``SecurityKeyCredentialProvider``.
    public init(relyingPartyIdentifier: String, challenge: [UInt8]) {
        self.relyingPartyIdentifier = relyingPartyIdentifier
        self.challenge = challenge
        self.clientData = .origin("https://" + relyingPartyIdentifier)
    }
}
