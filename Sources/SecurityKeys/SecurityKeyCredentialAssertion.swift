import _SecurityKeyInternals
import CTAP2

/// A sign-in, as AuthenticationServices' `ASAuthorizationSecurityKeyPublicKeyCredentialAssertion`
/// carries it.
public struct SecurityKeyCredentialAssertion: Hashable, Sendable {
    /// The credential that signed.
    public var credentialID: [UInt8]
    /// The authenticator data that was signed (WebAuthn L3 §6.1).
    public var rawAuthenticatorData: [UInt8]
    /// The signature over rawAuthenticatorData ‖ SHA-256(clientDataJSON).
    public var signature: [UInt8]
    /// The user handle of a discoverable credential (nil when the key sent none).
    public var userID: [UInt8]?
    /// The serialized client data; nil when the caller passed only its hash.
    public var rawClientDataJSON: [UInt8]?
    /// Whether the credential was found under the request's ``SecurityKeyCredentialAssertionRequest/appID``
    /// rather than its relying party identifier (the `appid` extension output).
    public var appID: Bool
    /// Whether the request asked for the `appid` extension (true whenever ``appID`` is): its
    /// output, ``appID``, is then reported, false as well as true (WebAuthn L3 §10.1.1).
    public var appIDRequested = false
    /// The URI of the key that signed.
    public var deviceURI: String
    /// The `prf` output, when PRF values were given and the key evaluated them.
    public var prf: SecurityKeyPRFAssertionOutput?
    /// The `hmacGetSecret` output, when raw salts were given and the key evaluated them.
    public var hmacGetSecret: SecurityKeyHMACSecretOutput?
    /// The `getCredBlob` output: the credential's stored blob (empty when none), when asked for.
    public var credentialBlob: [UInt8]?
    /// `largeBlob`: the blob read, or whether the write succeeded, when asked.
    public var largeBlob: SecurityKeyLargeBlobAssertionOutput?
    /// The authenticator data as parsed from the key's reply (nil for a result made from
    /// bytes with the public initializer).
    public var authenticatorData: AuthenticatorData?
    /// The client data hash the key signed (nil for a result made from bytes alone).
    public var clientDataHash: [UInt8]?

    /// Creates an assertion result.
    public init(
        credentialID: [UInt8], rawAuthenticatorData: [UInt8], signature: [UInt8], userID: [UInt8]?,
        rawClientDataJSON: [UInt8]?, appID: Bool, deviceURI: String
    ) {
        self.credentialID = credentialID
        self.rawAuthenticatorData = rawAuthenticatorData
        self.signature = signature
        self.userID = userID
        self.rawClientDataJSON = rawClientDataJSON
        self.appID = appID
        // A credential found under the AppID was asked for under it.
        self.appIDRequested = appID
        self.deviceURI = deviceURI
    }

    /// The result of the key's parsed reply: the authenticator data kept parsed, beside its bytes.
    init(
        credentialID: [UInt8], authenticatorData: AuthenticatorData, signature: [UInt8], userID: [UInt8]?,
        clientData: (json: [UInt8]?, hash: [UInt8]), appID: Bool, deviceURI: String
    ) {
        self.init(
            credentialID: credentialID, rawAuthenticatorData: authenticatorData.bytes, signature: signature,
            userID: userID, rawClientDataJSON: clientData.json, appID: appID, deviceURI: deviceURI)
        self.authenticatorData = authenticatorData
        self.clientDataHash = clientData.hash
    }

    /// The WebAuthn JSON encoding (WebAuthn L3 §5.1 `AuthenticationResponseJSON`), members
    /// sorted by name: binary members base64url; `appid` appears among the client extension
    /// results when an AppID was asked for. Written by ``PublicKeyCredentialJSON``.
    public var webAuthnJSON: String { PublicKeyCredentialJSON.assertion(self).sortedMembers().text() }

    /// The client extension outputs (WebAuthn L3 §5.8 `AuthenticationExtensionsClientOutputs`)
    /// as JSON text: binary members base64url.
    public var clientExtensionResultsJSON: String { PublicKeyCredentialJSON.clientExtensionResults(self).text() }
}
