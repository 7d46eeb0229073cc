import CBOR

/// The authenticatorGetAssertion and authenticatorGetNextAssertion response (CTAP 2.2 §6.2.2).
public struct GetAssertionResponse: Hashable, Sendable {
    /// The credential used; may be absent when the allow list named exactly one.
    public var credential: PublicKeyCredentialDescriptor?
    /// The authenticator data that was signed.
    public var authData: AuthenticatorData
    /// The assertion signature over authData ‖ clientDataHash.
    public var signature: [UInt8]
    /// The user of a discoverable credential.
    public var user: UserEntity?
    /// How many credentials matched (first response only).
    public var numberOfCredentials: UInt64?
    /// Whether the user picked this credential on the authenticator.
    public var userSelected: Bool?
    /// The credential's largeBlobKey, when requested.
    public var largeBlobKey: [UInt8]?
    /// Unsigned extension outputs, by extension identifier.
    public var unsignedExtensionOutputs: CBORMap?
    /// Members this library does not know, by key, as sent.
    public var unknownFields: CBORMap
}
