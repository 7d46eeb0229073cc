import CBOR

/// The authenticatorMakeCredential response (CTAP 2.2 §6.1.2).
public struct MakeCredentialResponse: Hashable, Sendable {
    /// The attestation statement format identifier.
    public var format: AttestationFormat
    /// The authenticator data, with the new credential.
    public var authData: AuthenticatorData
    /// The attestation statement, in the format's own shape.
    public var attestationStatement: CBORMap
    /// Whether an enterprise attestation was returned.
    public var enterpriseAttestation: Bool?
    /// The credential's largeBlobKey, when requested.
    public var largeBlobKey: [UInt8]?
    /// Unsigned extension outputs, by extension identifier.
    public var unsignedExtensionOutputs: CBORMap?
    /// Members this library does not know, by key, as sent.
    public var unknownFields: CBORMap

    /// The WebAuthn attestation object for this response.
    public var attestationObject: AttestationObject {
        AttestationObject(format: format, authData: authData, attestationStatement: attestationStatement)
    }
}
