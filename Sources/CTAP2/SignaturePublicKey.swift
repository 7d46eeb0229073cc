import _SecurityKeyInternals
import Crypto
import _CryptoExtras
import FoundationEssentials
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

    init(x963 point: [UInt8], curve: COSECurve) throws(CTAP2Error) {
        do {
            switch curve {
            case .p256: self = .p256(try P256.Signing.PublicKey(x963Representation: point))
            case .p384: self = .p384(try P384.Signing.PublicKey(x963Representation: point))
            case .p521: self = .p521(try P521.Signing.PublicKey(x963Representation: point))
            default: throw CTAP2Error(.unsupportedAlgorithm, "EC2 keys on curve \(curve) are not supported.")
            }
        } catch let error as CTAP2Error {
            throw error
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
        }
    }

    /// The DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7).
    public var spkiDERRepresentation: [UInt8] {
        switch self {
        case .p256(let k): [UInt8](k.derRepresentation)
        case .p384(let k): [UInt8](k.derRepresentation)
        case .p521(let k): [UInt8](k.derRepresentation)
        case .rsa(let k): [UInt8](k.derRepresentation)
        case .ed25519(let k):
            // SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (0 unused bits) key } (RFC 8410 §4).
            [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]
                + [UInt8](k.rawRepresentation)
        }
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
