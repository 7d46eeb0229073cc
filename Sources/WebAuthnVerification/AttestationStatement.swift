import CBOR
import CTAP2
import X509

/// How an attestation was made (WebAuthn §6.5.4 "Attestation Types").
public struct AttestationType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The type's name.
    public var rawValue: String
    /// Creates a type from its name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// No attestation.
    public static let none = AttestationType(rawValue: "none")
    /// Self attestation: signed by the credential key itself.
    public static let selfAttestation = AttestationType(rawValue: "self")
    /// Basic attestation: signed by an attestation key with a certificate (x5c).
    public static let basic = AttestationType(rawValue: "basic")
    /// Attestation CA: an attestation key certified by a CA per key (tpm's AIK, §8.3).
    public static let attCA = AttestationType(rawValue: "attca")
    /// Anonymization CA: a certificate per credential from an anonymizing CA (apple, §8.8).
    public static let anonCA = AttestationType(rawValue: "anonca")

    public var description: String { rawValue }
}

/// What verifying an attestation statement established (WebAuthn §7.1 step 21). The trust path
/// still has to be judged by an ``AttestationTrustPolicy``.
public struct AttestationVerification: Hashable, Sendable {
    /// The attestation type.
    public var type: AttestationType
    /// The attestation certificate first, then its chain as sent (x5c); empty for none and self.
    public var trustPath: [Certificate]
    /// Whether this is an enterprise attestation (CTAP 2.1 epAtt; WebAuthn "enterprise"
    /// conveyance), which may identify the authenticator uniquely.
    public var isEnterprise: Bool

    /// Creates a result from its parts.
    public init(type: AttestationType, trustPath: [Certificate], isEnterprise: Bool = false) {
        self.type = type
        self.trustPath = trustPath
        self.isEnterprise = isEnterprise
    }
}

extension AttestationObject {
    /// Verifies the attestation statement against `clientDataHash` with every check of its
    /// format's verification procedure (WebAuthn §8.2 packed, §8.3 tpm, §8.4 android-key,
    /// §8.5 android-safetynet, §8.6 fido-u2f, §8.7 none, §8.8 apple). Chaining the trust path
    /// to a trusted root is left to an ``AttestationTrustPolicy``.
    ///
    /// `enterpriseAttestation` is what the authenticator said of the attestation (CTAP 2.1
    /// `epAtt`), when the caller saw the authenticatorMakeCredential response; it is reported in
    /// ``AttestationVerification/isEnterprise``, as the attestation object itself does not say.
    public func verify(
        clientDataHash: [UInt8], enterpriseAttestation: Bool? = nil
    ) throws(WebAuthnVerificationError) -> AttestationVerification {
        guard clientDataHash.count == 32 else {
            throw WebAuthnVerificationError(
                .invalidClientDataHash, "The client data hash must be 32 bytes, not \(clientDataHash.count).")
        }
        guard let credential = authData.attestedCredentialData else {
            throw WebAuthnVerificationError(
                .attestedCredentialMissing, "The authenticator data holds no attested credential.")
        }
        let verify: (CBORMap, AuthenticatorData, AttestedCredentialData, [UInt8]) throws(WebAuthnVerificationError) ->
            AttestationVerification
        switch format {
        case .none:
            guard attestationStatement.isEmpty else {
                throw WebAuthnVerificationError(
                    .verificationFailed, "A none attestation statement must be empty.")
            }
            return AttestationVerification(type: .none, trustPath: [])
        case .packed: verify = PackedAttestation.verify
        case .fidoU2F: verify = FIDOU2FAttestation.verify
        case .tpm: verify = TPMAttestation.verify
        case .androidKey: verify = AndroidKeyAttestation.verify
        case .androidSafetyNet: verify = AndroidSafetyNetAttestation.verify
        case .apple: verify = AppleAttestation.verify
        default:
            throw WebAuthnVerificationError(
                .unsupportedAttestationFormat,
                "Attestation statements in the \(format) format cannot be verified here.")
        }
        var result = try verify(attestationStatement, authData, credential, clientDataHash)
        if enterpriseAttestation == true, result.type != .selfAttestation {
            result.isEnterprise = true
        }
        return result
    }
}

/// Reads the fields of an attestation statement map, with typed errors.
struct StatementReader {
    let map: CBORMap
    /// What the map is, for messages ("packed attestation statement").
    let context: String

    init(_ map: CBORMap, _ context: String) {
        self.map = map
        self.context = context
    }

    func missing(_ name: String) -> WebAuthnVerificationError {
        WebAuthnVerificationError(.malformedInput, "The \(context) lacks its required \(name) field.")
    }

    private func wrongType(_ name: String, _ expected: String) -> WebAuthnVerificationError {
        WebAuthnVerificationError(.malformedInput, "The \(name) field of the \(context) is not \(expected).")
    }

    func bytes(_ name: String) throws(WebAuthnVerificationError) -> [UInt8] {
        guard let v = map[.textString(name)] else { throw missing(name) }
        guard let b = v.bytesValue else { throw wrongType(name, "a byte string") }
        return b
    }

    func int(_ name: String) throws(WebAuthnVerificationError) -> Int {
        guard let v = map[.textString(name)] else { throw missing(name) }
        guard let n = v.intValue else { throw wrongType(name, "an integer") }
        return n
    }
}
