import _SecurityKeyInternals
import CBOR
import CTAP2
import Crypto

/// The new credential of a registration, parsed once: its attestation object (as the provider
/// parsed it, or from the bytes a daemon sent), attested credential data and public key.
public struct SecurityKeyAttestedCredential: Sendable {
    /// The attestation object.
    public var attestationObject: AttestationObject
    /// The new credential: its ID and COSE public key.
    public var credential: AttestedCredentialData
    /// The credential's public key.
    public var publicKey: SignaturePublicKey

    /// The credential `registration` made; `malformed-response` when its reply holds none.
    public init(_ registration: SecurityKeyCredentialRegistration) throws(CTAP2Error) {
        if let parsed = registration.attestationObject {
            attestationObject = parsed
        } else {
            attestationObject = try AttestationObject(cbor: registration.rawAttestationObject)
        }
        guard let credential = attestationObject.authData.attestedCredentialData else {
            throw CTAP2Error.malformed("The key's reply holds no new credential.")
        }
        self.credential = credential
        publicKey = try credential.credentialPublicKey.publicKey()
    }

    /// `registration` (which made this credential) as `securitykey register --json` prints it
    /// (Docs/CLI.md): the RegistrationResponseJSON with the L3 members of the attested key, and
    /// beside it the RP ID, user handle and client data hash given, the attestation format, the
    /// public key as COSE and PEM, the device, and the credProtect and minPinLength outputs.
    public func json(
        _ registration: SecurityKeyCredentialRegistration, relyingPartyIdentifier: String, userHandle: [UInt8],
        clientDataHash: [UInt8]
    ) -> JSONValue {
        let outputs = registration.authenticatorExtensionOutputs
        return PublicKeyCredentialJSON.registration(
            registration,
            attestedKey: .init(
                authenticatorData: attestationObject.authData.bytes, publicKey: publicKey.spkiDERRepresentation,
                algorithm: (credential.credentialPublicKey.algorithm?.rawValue).map { Int($0) }),
            beside: [
                ("rpId", .string(relyingPartyIdentifier)),
                ("userId", .string(Base64URL.encode(userHandle))),
                ("clientDataHash", .string(Base64URL.encode(clientDataHash))),
                ("attestationFormat", .string(attestationObject.format.rawValue)),
                ("publicKeyCOSE", .string(Base64URL.encode(credential.credentialPublicKey.cborEncoded))),
                ("publicKeyPEM", .string(publicKey.pemRepresentation)),
                ("device", .string(registration.deviceURI)),
                ("credProtect", outputs.credProtect.map { .integer(Int64(clamping: $0.rawValue)) }),
                ("minPinLength", outputs.minPINLength.map { .integer(Int64(clamping: $0)) }),
            ])
    }
}

extension SecurityKeyCredentialAssertion {
    /// The assertion as `securitykey authenticate --json` prints it (Docs/CLI.md): the
    /// AuthenticationResponseJSON (an absent user handle as null) with, beside it, the RP ID and
    /// client data hash given, the sign count, the UP and UV flags of `authData` and the device.
    public func json(
        relyingPartyIdentifier: String, clientDataHash: [UInt8], authData: AuthenticatorData
    ) -> JSONValue {
        PublicKeyCredentialJSON.assertion(
            self, absentUserHandle: .null,
            beside: [
                ("rpId", .string(relyingPartyIdentifier)),
                ("clientDataHash", .string(Base64URL.encode(clientDataHash))),
                ("signCount", .integer(Int64(authData.signCount))),
                ("userPresent", .bool(authData.userPresent)),
                ("userVerified", .bool(authData.userVerified)),
                ("device", .string(deviceURI)),
            ])
    }
}

extension SecurityKeyClientData {
    /// The client data hash that was signed: the SHA-256 of `json`, the clientDataJSON built from
    /// this client data, or the hash this client data is (empty when neither).
    public func signedHash(json: [UInt8]?) -> [UInt8] {
        if let json { return Array(SHA256.hash(data: json)) }
        if case .hash(let hash) = self { return hash }
        return []
    }
}
