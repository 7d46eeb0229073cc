import _SecurityKeyInternals
import Crypto
import _CryptoExtras
import FoundationEssentials
import Secp256k1
import X509

/// A signature-verification public key held by swift-crypto: what a COSE key or an
/// attestation certificate converts to, and what exports as SPKI DER or PEM.
public enum SignaturePublicKey: Sendable {
    /// ECDSA on NIST P-256.
    case p256(P256.Signing.PublicKey)
    /// ECDSA on NIST P-384.
    case p384(P384.Signing.PublicKey)
    /// ECDSA on NIST P-521.
    case p521(P521.Signing.PublicKey)
    /// Ed25519.
    case ed25519(Curve25519.Signing.PublicKey)
    /// RSA.
    case rsa(_RSA.Signing.PublicKey)
    /// ECDSA on secp256k1 (ES256K).
    case secp256k1(Secp256k1.PublicKey)
    /// ML-DSA-65 (FIPS 204).
    case mlDSA65(MLDSA65.PublicKey)
    /// ML-DSA-87 (FIPS 204).
    case mlDSA87(MLDSA87.PublicKey)

    init(x963 point: [UInt8], curve: COSECurve) throws(CTAP2Error) {
        do {
            switch curve {
            case .p256: self = .p256(try P256.Signing.PublicKey(x963Representation: point))
            case .p384: self = .p384(try P384.Signing.PublicKey(x963Representation: point))
            case .p521: self = .p521(try P521.Signing.PublicKey(x963Representation: point))
            case .secp256k1: self = .secp256k1(try Secp256k1.PublicKey(x963Representation: point))
            default: throw CTAP2Error(.unsupportedAlgorithm, "EC2 keys on curve \(curve) are not supported.")
            }
        } catch let error as CTAP2Error {
            throw error
        } catch let error as Secp256k1Error where error.code == .library {
            // libcrypto.so.3, loaded on first use, is missing or failed: not the key's fault.
            throw CTAP2Error(.unsupportedAlgorithm, error.message, underlying: error)
        } catch {
            throw CTAP2Error(
                .malformedResponse, "The \(curve) public key is not a point on its curve.", underlying: error)
        }
    }

    init(ed25519 raw: [UInt8]) throws(CTAP2Error) {
        do {
            self = .ed25519(try Curve25519.Signing.PublicKey(rawRepresentation: raw))
        } catch {
            throw CTAP2Error(.malformedResponse, "The Ed25519 public key is not valid.", underlying: error)
        }
    }

    /// An ML-DSA public key in FIPS 204's encoding (1,952 bytes for ML-DSA-65, 2,592 for ML-DSA-87).
    init(mlDSA raw: [UInt8], algorithm: COSEAlgorithm) throws(CTAP2Error) {
        let expected = algorithm == .mlDSA65 ? 1952 : 2592
        guard raw.count == expected else {
            throw CTAP2Error.malformed("The \(algorithm) public key is \(raw.count) bytes, not \(expected).")
        }
        do {
            if algorithm == .mlDSA65 {
                self = .mlDSA65(try MLDSA65.PublicKey(rawRepresentation: raw))
            } else {
                self = .mlDSA87(try MLDSA87.PublicKey(rawRepresentation: raw))
            }
        } catch {
            throw CTAP2Error(.malformedResponse, "The \(algorithm) public key is not valid.", underlying: error)
        }
    }

    init(rsaModulus n: [UInt8], exponent e: [UInt8]) throws(CTAP2Error) {
        do {
            self = .rsa(try _RSA.Signing.PublicKey(n: n, e: e))
        } catch {
            throw CTAP2Error(
                .malformedResponse, "The RSA public key is not valid or shorter than 2048 bits.",
                underlying: error)
        }
    }

    /// The key of an X.509 certificate, when it is of a kind this library verifies with.
    public init?(_ key: Certificate.PublicKey) {
        if let k = P256.Signing.PublicKey(key) {
            self = .p256(k)
        } else if let k = P384.Signing.PublicKey(key) {
            self = .p384(k)
        } else if let k = P521.Signing.PublicKey(key) {
            self = .p521(k)
        } else if let k = Curve25519.Signing.PublicKey(key) {
            self = .ed25519(k)
        } else if let k = _RSA.Signing.PublicKey(key) {
            self = .rsa(k)
        } else {
            return nil
        }
    }

    /// A short name of the key kind, for messages.
    public var kindName: String {
        switch self {
        case .p256: "P-256"
        case .p384: "P-384"
        case .p521: "P-521"
        case .ed25519: "Ed25519"
        case .rsa: "RSA"
        case .secp256k1: "secp256k1"
        case .mlDSA65: "ML-DSA-65"
        case .mlDSA87: "ML-DSA-87"
        }
    }

    /// The DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7).
    public var spkiDERRepresentation: [UInt8] {
        switch self {
        case .p256(let k): [UInt8](k.derRepresentation)
        case .p384(let k): [UInt8](k.derRepresentation)
        case .p521(let k): [UInt8](k.derRepresentation)
        case .rsa(let k): [UInt8](k.derRepresentation)
        case .secp256k1(let k): k.derRepresentation
        // id-Ed25519 1.3.101.112 (RFC 8410 §3).
        case .ed25519(let k): Self.spki(algorithm: [0x06, 0x03, 0x2B, 0x65, 0x70], key: Array(k.rawRepresentation))
        // id-ml-dsa-65 2.16.840.1.101.3.4.3.18 and id-ml-dsa-87 ….19, without parameters (RFC 9881 §2).
        case .mlDSA65(let k):
            Self.spki(
                algorithm: [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x12],
                key: Array(k.rawRepresentation))
        case .mlDSA87(let k):
            Self.spki(
                algorithm: [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x13],
                key: Array(k.rawRepresentation))
        }
    }

    /// SEQUENCE { SEQUENCE { algorithm OID }, BIT STRING (0 unused bits) key } in DER.
    private static func spki(algorithm oid: [UInt8], key: [UInt8]) -> [UInt8] {
        func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            let n = content.count
            let length: [UInt8] =
                n < 0x80 ? [UInt8(n)]
                : n <= 0xFF ? [0x81, UInt8(n)] : [0x82, UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)]
            return [tag] + length + content
        }
        return tlv(0x30, tlv(0x30, oid) + tlv(0x03, [0x00] + key))
    }

    /// The SubjectPublicKeyInfo as a PEM `PUBLIC KEY` block (RFC 7468 §13).
    public var pemRepresentation: String {
        let b64 = Base64.encode(spkiDERRepresentation)
        var lines = ["-----BEGIN PUBLIC KEY-----"]
        var rest = Substring(b64)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(64)))
            rest = rest.dropFirst(64)
        }
        lines.append("-----END PUBLIC KEY-----")
        return lines.joined(separator: "\n") + "\n"
    }
}
