import _SecurityKeyInternals
import CTAP2

/// A new credential, as AuthenticationServices'
/// `ASAuthorizationSecurityKeyPublicKeyCredentialRegistration` carries it.
public struct SecurityKeyCredentialRegistration: Hashable, Sendable {
    /// The new credential's ID.
    public var credentialID: [UInt8]
    /// The CBOR attestation object (WebAuthn L3 §6.5): fmt, attStmt, authData.
    public var rawAttestationObject: [UInt8]
    /// The serialized client data; nil when the caller passed only its hash.
    public var rawClientDataJSON: [UInt8]?
    /// How the key that holds the credential can be reached.
    public var transports: [SecurityKeyTransport]
    /// The URI of the key that made the credential.
    public var deviceURI: String
    /// The `prf` output, when PRF was asked for.
    public var prf: SecurityKeyPRFRegistrationOutput?
    /// The `hmacCreateSecret` output, when it was asked for.
    public var hmacCreateSecret: Bool?
    /// The `credProps` output, when it was asked for.
    public var credentialProperties: SecurityKeyCredentialProperties?
    /// The `credBlob` output: whether the blob was stored, when one was given.
    public var credentialBlobStored: Bool?
    /// The `appidExclude` output: true when the AppID's credentials were checked.
    public var appIDExclude: Bool?
    /// `largeBlob`: whether the credential can hold a large blob, when asked.
    public var largeBlob: SecurityKeyLargeBlobRegistrationOutput?
    /// The authenticator extension outputs in the authenticator data (credProtect level,
    /// minPinLength, ...), as types.
    public var authenticatorExtensionOutputs = AuthenticatorExtensionOutputs()
    /// The attestation object as parsed from the key's reply, attestation removed when `none`
    /// was asked for (nil for a result made from bytes with
    /// ``init(credentialID:rawAttestationObject:rawClientDataJSON:transports:deviceURI:)``).
    public var attestationObject: AttestationObject?
    /// The client data hash the key signed (nil for a result made from bytes alone).
    public var clientDataHash: [UInt8]?

    /// The authenticator data with the new credential, parsed (nil without ``attestationObject``).
    public var authenticatorData: AuthenticatorData? { attestationObject?.authData }

    /// Creates a registration result.
    public init(
        credentialID: [UInt8], rawAttestationObject: [UInt8], rawClientDataJSON: [UInt8]?,
        transports: [SecurityKeyTransport], deviceURI: String
    ) {
        self.credentialID = credentialID
        self.rawAttestationObject = rawAttestationObject
        self.rawClientDataJSON = rawClientDataJSON
        self.transports = transports
        self.deviceURI = deviceURI
    }

    /// The result of the key's parsed reply: the attestation object kept parsed, beside its bytes.
    init(
        attestationObject: AttestationObject, credentialID: [UInt8],
        clientData: (json: [UInt8]?, hash: [UInt8]), transports: [SecurityKeyTransport], deviceURI: String
    ) {
        self.init(
            credentialID: credentialID, rawAttestationObject: attestationObject.cborEncoded,
            rawClientDataJSON: clientData.json, transports: transports, deviceURI: deviceURI)
        self.attestationObject = attestationObject
        self.clientDataHash = clientData.hash
    }

    /// The WebAuthn JSON encoding (WebAuthn L3 §5.1 `RegistrationResponseJSON`, what
    /// `PublicKeyCredential.toJSON()` gives), members sorted by name: binary members base64url.
    /// Written by ``PublicKeyCredentialJSON``.
    public var webAuthnJSON: String { PublicKeyCredentialJSON.registration(self).sortedMembers().text() }

    /// The client extension outputs (WebAuthn L3 §5.8 `AuthenticationExtensionsClientOutputs`)
    /// as JSON text: binary members base64url.
    public var clientExtensionResultsJSON: String { PublicKeyCredentialJSON.clientExtensionResults(self).text() }
}
