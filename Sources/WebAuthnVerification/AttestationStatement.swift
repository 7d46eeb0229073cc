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

    public var description: String { rawValue }
}

/// What verifying an attestation statement established (WebAuthn §7.1 step 21). The trust path
/// still has to be judged by an ``AttestationTrustPolicy``.
public struct AttestationVerification: Hashable, Sendable {
    /// The attestation type.
    public var type: AttestationType
    /// The attestation certificate first, then its chain as sent (x5c); empty for none and self.
    public var trustPath: [Certificate]

    /// Creates a result from its parts.
    public init(type: AttestationType, trustPath: [Certificate]) {
        self.type = type
        self.trustPath = trustPath
    }
}

extension AttestationObject {
    /// Verifies the attestation statement against `clientDataHash` (WebAuthn §8.2 packed,
    /// §8.6 fido-u2f, §8.7 none). For x5c the leaf signature and the §8.2.1 certificate
    /// requirements are checked; chaining to a trusted root is left to an
    /// ``AttestationTrustPolicy``.
    public func verify(clientDataHash: [UInt8]) throws(WebAuthnVerificationError) -> AttestationVerification {
        guard clientDataHash.count == 32 else {
            throw WebAuthnVerificationError(
                .invalidClientDataHash, "The client data hash must be 32 bytes, not \(clientDataHash.count).")
        }
        guard let credential = authData.attestedCredentialData else {
            throw WebAuthnVerificationError(
                .attestedCredentialMissing, "The authenticator data holds no attested credential.")
        }
        switch format {
        case .none:
            guard attestationStatement.isEmpty else {
                throw WebAuthnVerificationError(
                    .verificationFailed, "A none attestation statement must be empty.")
            }
            return AttestationVerification(type: .none, trustPath: [])
        case .packed:
            return try PackedAttestation.verify(
                attestationStatement, authData: authData, credential: credential,
                clientDataHash: clientDataHash)
        case .fidoU2F:
            return try FIDOU2FAttestation.verify(
                attestationStatement, authData: authData, credential: credential,
                clientDataHash: clientDataHash)
        default:
            throw WebAuthnVerificationError(
                .unsupportedAttestationFormat,
                "Attestation statements in the \(format) format cannot be verified here.")
        }
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
