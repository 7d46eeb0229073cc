import _SecurityKeyInternals
import CTAP2
import Crypto
import X509

/// A registration response as a relying party receives it (WebAuthn §5.2.1
/// AuthenticatorAttestationResponse, RegistrationResponseJSON), its CBOR already parsed.
public struct RegistrationResponse: Sendable {
    /// The credential ID as the client sent it (base64url), when it sent one.
    public var id: String?
    /// The client data.
    public var clientData: ClientDataInput
    /// The attestation object.
    public var attestationObject: AttestationObject

    /// Creates a response from its parts.
    public init(id: String?, clientData: ClientDataInput, attestationObject: AttestationObject) {
        self.id = id
        self.clientData = clientData
        self.attestationObject = attestationObject
    }
}

/// What a relying party stores about a credential to verify its assertions (WebAuthn §4
/// "Credential Record").
public struct CredentialRecord: Sendable {
    /// The credential's public key.
    public enum PublicKey: Sendable {
        /// The COSE_Key from the attested credential data; it states its algorithm.
        case cose(COSEKey)
        /// A bare key (for example a PEM SubjectPublicKeyInfo) and the algorithm it signs with.
        case key(SignaturePublicKey, algorithm: COSEAlgorithm)
    }

    /// The credential ID, when known; an assertion naming another is refused.
    public var id: [UInt8]?
    /// The credential's public key.
    public var publicKey: PublicKey
    /// The signature counter last seen (0 for a new credential).
    public var signCount: UInt32

    /// Creates a record from its parts.
    public init(id: [UInt8]?, publicKey: PublicKey, signCount: UInt32) {
        self.id = id
        self.publicKey = publicKey
        self.signCount = signCount
    }
}

/// What a verified registration established (WebAuthn §7.1 steps 26-27).
public struct VerifiedRegistration: Sendable {
    /// The new credential's ID.
    public var credentialID: [UInt8]
    /// The new credential's public key.
    public var publicKey: COSEKey
    /// The signature counter at registration.
    public var signCount: UInt32
    /// The authenticator data flags (UP, UV, BE, BS, ...).
    public var flags: AuthenticatorData.Flags
    /// The authenticator model's AAGUID.
    public var aaguid: AAGUID
    /// The attestation statement format.
    public var attestationFormat: AttestationFormat
    /// The attestation type, trust path and anchor, as the trust policy judged them.
    public var attestation: AttestationTrust

    /// The record to store and verify this credential's assertions with.
    public var credentialRecord: CredentialRecord {
        CredentialRecord(id: credentialID, publicKey: .cose(publicKey), signCount: signCount)
    }
}

/// Verifies registration ceremonies (WebAuthn §7.1) against a ``RelyingPartyPolicy``, leaving
/// attestation trust to an ``AttestationTrustPolicy``.
public struct RegistrationVerifier: Sendable {
    /// What the relying party expects.
    public var policy: RelyingPartyPolicy
    /// How attestation trust is judged.
    public var trustPolicy: any AttestationTrustPolicy

    /// Creates a verifier; by default attestation is reported but not anchored.
    public init(
        policy: RelyingPartyPolicy, trustPolicy: any AttestationTrustPolicy = UnanchoredAttestationTrust()
    ) {
        self.policy = policy
        self.trustPolicy = trustPolicy
    }

    /// Verifies `response`, returning what it established or throwing the first check that
    /// failed.
    public func verify(_ response: RegistrationResponse) async throws(WebAuthnVerificationError)
        -> VerifiedRegistration
    {
        let object = response.attestationObject
        let authData = object.authData
        let clientDataHash = try response.clientData.checkedHash(type: "webauthn.create", policy: policy)
        try checkRelyingParty(authData, policy)
        guard let credential = authData.attestedCredentialData else {
            throw WebAuthnVerificationError(
                .attestedCredentialMissing, "The registration's authenticator data holds no credential.")
        }
        try checkUser(authData, policy, ceremony: "registration")
        if let id = response.id, !sameCredentialID(id, credential.credentialID) {
            throw WebAuthnVerificationError(
                .credentialIDMismatch,
                "The registration's id is not the credential ID in its attestation object.")
        }
        if let allowed = policy.allowedAlgorithms {
            guard let algorithm = credential.credentialPublicKey.algorithm, allowed.contains(algorithm) else {
                throw WebAuthnVerificationError(
                    .algorithmNotAllowed,
                    "The credential's algorithm \(credential.credentialPublicKey.algorithm.map { "\($0)" } ?? "(none)") is not allowed."
                )
            }
        }
        let statement = try object.verify(clientDataHash: clientDataHash)
        let trust = try await trustPolicy.evaluate(
            AttestationEvidence(format: object.format, aaguid: credential.aaguid, statement: statement))
        return VerifiedRegistration(
            credentialID: credential.credentialID, publicKey: credential.credentialPublicKey,
            signCount: authData.signCount, flags: authData.flags, aaguid: credential.aaguid,
            attestationFormat: object.format, attestation: trust)
    }
}

/// WebAuthn §7.1 step 13 / §7.2 step 15.
func checkRelyingParty(_ authData: AuthenticatorData, _ policy: RelyingPartyPolicy)
    throws(WebAuthnVerificationError)
{
    guard let rpID = policy.relyingPartyID else { return }
    guard authData.rpIDHash == Array(SHA256.hash(data: Array(rpID.utf8))) else {
        throw WebAuthnVerificationError(
            .rpIDHashMismatch, "The authenticator data is for another relying party than \(rpID).")
    }
}

/// WebAuthn §7.1 steps 14-15 / §7.2 steps 16-17.
func checkUser(
    _ authData: AuthenticatorData, _ policy: RelyingPartyPolicy, ceremony: String
) throws(WebAuthnVerificationError) {
    guard authData.userPresent else {
        throw WebAuthnVerificationError(
            .userPresenceMissing, "The \(ceremony) was made without user presence.")
    }
    if policy.requiresUserVerification, !authData.userVerified {
        throw WebAuthnVerificationError(
            .userVerificationMissing, "The \(ceremony) was made without user verification, which is required."
        )
    }
}

/// Whether base64url `text` (padding allowed, as clients may send it) names `credentialID`.
func sameCredentialID(_ text: String, _ credentialID: [UInt8]) -> Bool {
    String(text.filter { $0 != "=" }) == Base64URL.encode(credentialID)
}

extension CredentialRecord {
    /// The record of a credential known only by its public key (a SubjectPublicKeyInfo, as a
    /// PEM file holds it), verified with the algorithm its kind is taken to sign with
    /// (``SignaturePublicKey/defaultAlgorithm``), with `id` and `signCount` from a registration
    /// when there is one; nil for a kind of key this module cannot verify.
    public init?(publicKey: Certificate.PublicKey, id: [UInt8]? = nil, signCount: UInt32 = 0) {
        guard let key = SignaturePublicKey(publicKey) else { return nil }
        self.init(id: id, publicKey: .key(key, algorithm: key.defaultAlgorithm), signCount: signCount)
    }
}
