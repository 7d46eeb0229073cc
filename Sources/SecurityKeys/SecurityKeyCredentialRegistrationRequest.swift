import CBOR

/// A request to create a credential on a security key (WebAuthn L3 §5.4
/// `PublicKeyCredentialCreationOptions`; AuthenticationServices'
/// `ASAuthorizationSecurityKeyPublicKeyCredentialRegistrationRequest`).
public struct SecurityKeyCredentialRegistrationRequest: Hashable, Sendable {
    /// The relying party identifier.
    public var relyingPartyIdentifier: String
    /// The relying party's display name; defaults to its identifier.
    public var relyingPartyName: String?
    /// The relying party's challenge.
    public var challenge: [UInt8]
    /// The user's display name ("Anne Example").
    public var displayName: String
    /// The user's account name ("anne@example.com").
    public var name: String
    /// The user handle (at most 64 bytes).
    public var userID: [UInt8]
    /// Acceptable algorithms, preferred first (default ES256).
    public var credentialParameters: [SecurityKeyAlgorithm] = [.es256]
    /// Credentials the key must not hold already.
    public var excludedCredentials: [SecurityKeyCredentialDescriptor] = []
    /// Whether the credential should be discoverable.
    public var residentKeyPreference: ResidentKeyPreference = .discouraged
    /// Whether the user should be verified.
    public var userVerificationPreference: UserVerificationPreference = .preferred
    /// What attestation the relying party wants.
    public var attestationPreference: AttestationConveyancePreference = .none
    /// CTAP authenticator extension inputs by identifier (CTAP 2.2 §12), sent as given.
    public var extensionInputs: CBORMap = CBORMap()
    /// The client data, built from an origin by default (`https://` + the RP ID).
    public var clientData: SecurityKeyClientData
    /// How long the whole request may take, including the user's touch and PIN.
    public var timeout: Duration = .seconds(120)

    /// Creates a request; see ``SecurityKeyCredentialProvider``.
    public init(
        relyingPartyIdentifier: String, challenge: [UInt8], displayName: String, name: String, userID: [UInt8]
    ) {
        self.relyingPartyIdentifier = relyingPartyIdentifier
        self.challenge = challenge
        self.displayName = displayName
        self.name = name
        self.userID = userID
        self.clientData = .origin("https://" + relyingPartyIdentifier)
    }
}
