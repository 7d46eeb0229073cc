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
    /// `attestationFormats` (WebAuthn L3 §5.4): the attestation statement formats wanted, best
    /// first; sent as attestationFormatsPreference (CTAP 2.2 §6.1) to a key that lists
    /// getInfo attestationFormats.
    public var attestationFormats: [String] = []
    /// `thirdPartyPayment` (CTAP 2.2 §12.9; the WebAuthn payment extension's `isPayment`): make
    /// the credential usable for payments on other sites, where the key supports it.
    public var thirdPartyPayment = false
    /// `prf` (WebAuthn L3 §10.1.4): a credential with a PRF, evaluated at once where the key can.
    public var prf: SecurityKeyPRFRegistrationInput?
    /// `hmacCreateSecret` (CTAP 2.2 §12.5): a credential with an hmac-secret, for raw hmac-secret use.
    public var hmacCreateSecret = false
    /// `credProtect` (CTAP 2.2 §12.1): when the credential may be used without user verification.
    public var credentialProtection: SecurityKeyCredentialProtection?
    /// `credBlob` (CTAP 2.2 §12.2): bytes to store with the credential (at most the key's maxCredBlobLength).
    public var credentialBlob: [UInt8]?
    /// `minPinLength` (CTAP 2.2 §12.4): ask for the key's minimum PIN length (keys tell only
    /// the relying parties they were configured to).
    public var minimumPINLength = false
    /// `credProps` (WebAuthn L3 §10.1.3): report whether the credential is discoverable.
    public var credentialProperties = false
    /// `appidExclude` (WebAuthn L3 §10.1.2): a legacy U2F AppID whose credentials are excluded too.
    public var appIDExclude: String?
    /// `largeBlob` (WebAuthn L3 §10.1.5): large-blob storage for the new (discoverable) credential.
    public var largeBlob: SecurityKeyLargeBlobRegistrationInput?
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
