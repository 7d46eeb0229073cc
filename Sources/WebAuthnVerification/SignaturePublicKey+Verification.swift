import CTAP2
import Crypto
import _CryptoExtras
import Secp256k1

extension SignaturePublicKey {
    /// Checks `signature` over `message` under `algorithm` (WebAuthn §6.5.6 signature formats:
    /// ECDSA signatures are DER, EdDSA raw, RSA raw); throws
    /// ``WebAuthnVerificationError/Code/verificationFailed`` when it does not verify.
    public func verifySignature(
        _ signature: [UInt8], for message: [UInt8], algorithm: COSEAlgorithm
    ) throws(WebAuthnVerificationError) {
        let valid: Bool
        switch (algorithm, self) {
        case (.es256, .p256(let k)), (.esp256, .p256(let k)):
            guard let sig = try? P256.Signing.ECDSASignature(derRepresentation: signature) else {
                throw Self.failed(algorithm, "is not a DER ECDSA signature")
            }
            valid = k.isValidSignature(sig, for: SHA256.hash(data: message))
        case (.es384, .p384(let k)), (.esp384, .p384(let k)):
            guard let sig = try? P384.Signing.ECDSASignature(derRepresentation: signature) else {
                throw Self.failed(algorithm, "is not a DER ECDSA signature")
            }
            valid = k.isValidSignature(sig, for: SHA384.hash(data: message))
        case (.es512, .p521(let k)), (.esp512, .p521(let k)):
            guard let sig = try? P521.Signing.ECDSASignature(derRepresentation: signature) else {
                throw Self.failed(algorithm, "is not a DER ECDSA signature")
            }
            valid = k.isValidSignature(sig, for: SHA512.hash(data: message))
        case (.edDSA, .ed25519(let k)), (.ed25519, .ed25519(let k)):
            valid = k.isValidSignature(signature, for: message)
        case (.rs256, .rsa(let k)):
            valid = k.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: message),
                padding: .insecurePKCS1v1_5)
        case (.rs384, .rsa(let k)):
            valid = k.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA384.hash(data: message),
                padding: .insecurePKCS1v1_5)
        case (.rs512, .rsa(let k)):
            valid = k.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA512.hash(data: message),
                padding: .insecurePKCS1v1_5)
        case (.rs1, .rsa(let k)):
            valid = k.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature),
                for: Insecure.SHA1.hash(data: message),
                padding: .insecurePKCS1v1_5)
        case (.ps256, .rsa(let k)):
            // RFC 8230 §2: MGF1 with SHA-256 and a salt as long as the hash (swift-crypto's PSS).
            valid = k.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: message),
                padding: .PSS)
        case (.es256K, .secp256k1(let k)):
            valid = k.isValidSignature(signature, for: message)
        case (.mlDSA65, .mlDSA65(let k)):
            valid = k.isValidSignature(signature, for: message)
        case (.mlDSA87, .mlDSA87(let k)):
            valid = k.isValidSignature(signature, for: message)
        case (.es256, _), (.esp256, _), (.es384, _), (.esp384, _), (.es512, _), (.esp512, _),
            (.edDSA, _), (.ed25519, _), (.rs256, _), (.rs384, _), (.rs512, _), (.rs1, _), (.ps256, _),
            (.es256K, _), (.mlDSA65, _), (.mlDSA87, _):
            throw WebAuthnVerificationError(
                .verificationFailed, "A \(algorithm) signature cannot come from a \(kindName) key.")
        default:
            throw WebAuthnVerificationError(
                .unsupportedAlgorithm, "Signatures with \(algorithm) cannot be verified here.")
        }
        guard valid else { throw Self.failed(algorithm, "does not verify") }
    }

    /// The algorithm a bare key (a PEM SubjectPublicKeyInfo, which names no COSE algorithm)
    /// is taken to sign with: ES256/384/512 or ES256K by curve, EdDSA, RS256, or ML-DSA by its size.
    public var defaultAlgorithm: COSEAlgorithm {
        switch self {
        case .p256: .es256
        case .p384: .es384
        case .p521: .es512
        case .ed25519: .edDSA
        case .rsa: .rs256
        case .secp256k1: .es256K
        case .mlDSA65: .mlDSA65
        case .mlDSA87: .mlDSA87
        }
    }

    private static func failed(_ algorithm: COSEAlgorithm, _ what: String) -> WebAuthnVerificationError {
        WebAuthnVerificationError(.verificationFailed, "The \(algorithm) signature \(what).")
    }
}
