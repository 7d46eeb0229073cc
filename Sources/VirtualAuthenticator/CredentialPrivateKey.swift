import _SecurityKeyInternals
import Crypto
import CBOR

/// A credential's private key, derived from a 32-byte seed so that it fits in a sealed
/// credential ID whatever the algorithm.
struct CredentialPrivateKey {
    enum Key {
        case p256(P256.Signing.PrivateKey)
        case p384(P384.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
    }

    static let seedLength = 32

    let algorithm: COSEAlgorithm
    let key: Key

    /// Derives the key for `algorithm` from `seed`; nil when the seed gives no valid scalar or
    /// the algorithm is not implemented.
    init?(algorithm: COSEAlgorithm, seed: [UInt8]) {
        guard seed.count == Self.seedLength else { return nil }
        let info = Array("securitykey virtual credential \(algorithm.rawValue)".utf8)
        func derive(_ count: Int) -> [UInt8] {
            let key = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: seed), info: info, outputByteCount: count)
            return key.withUnsafeBytes { Array($0) }
        }
        switch algorithm {
        case .es256:
            guard let k = try? P256.Signing.PrivateKey(rawRepresentation: derive(32)) else { return nil }
            key = .p256(k)
        case .es384:
            guard let k = try? P384.Signing.PrivateKey(rawRepresentation: derive(48)) else { return nil }
            key = .p384(k)
        case .edDSA:
            guard let k = try? Curve25519.Signing.PrivateKey(rawRepresentation: derive(32)) else {
                return nil
            }
            key = .ed25519(k)
        default:
            return nil
        }
        self.algorithm = algorithm
    }

    /// Makes a new key from a fresh random seed, returning the seed with it.
    static func generate(algorithm: COSEAlgorithm) -> (seed: [UInt8], key: CredentialPrivateKey)? {
        // A seed fails only when HKDF yields a scalar outside the curve order (p < 2^-32).
        for _ in 0..<8 {
            let seed = SystemRandom.bytes(seedLength)
            if let key = CredentialPrivateKey(algorithm: algorithm, seed: seed) { return (seed, key) }
        }
        return nil
    }

    /// Signs `data` as WebAuthn §6.5.5 requires: DER ECDSA signatures, raw Ed25519 ones.
    func sign(_ data: [UInt8]) throws(VirtualKeyError) -> [UInt8] {
        do {
            switch key {
            case .p256(let k): return Array(try k.signature(for: data).derRepresentation)
            case .p384(let k): return Array(try k.signature(for: data).derRepresentation)
            case .ed25519(let k): return Array(try k.signature(for: data))
            }
        } catch {
            throw VirtualKeyError(.crypto, "Signing with the credential key failed.", underlying: error)
        }
    }

    /// The public key as a COSE_Key (RFC 9052 §7, RFC 9053 §7.1–7.2).
    var cosePublicKey: CBORMap {
        var map = CBORMap()
        switch key {
        case .p256(let k):
            let xy = Array(k.publicKey.rawRepresentation)
            map[COSEKeyParameter.keyType] = .int(COSEKeyParameter.keyTypeEC2)
            map[COSEKeyParameter.algorithm] = .int(algorithm.rawValue)
            map[COSEKeyParameter.curve] = .int(COSEKeyParameter.curveP256)
            map[COSEKeyParameter.x] = .byteString(Array(xy[0..<32]))
            map[COSEKeyParameter.y] = .byteString(Array(xy[32..<64]))
        case .p384(let k):
            let xy = Array(k.publicKey.rawRepresentation)
            map[COSEKeyParameter.keyType] = .int(COSEKeyParameter.keyTypeEC2)
            map[COSEKeyParameter.algorithm] = .int(algorithm.rawValue)
            map[COSEKeyParameter.curve] = .int(COSEKeyParameter.curveP384)
            map[COSEKeyParameter.x] = .byteString(Array(xy[0..<48]))
            map[COSEKeyParameter.y] = .byteString(Array(xy[48..<96]))
        case .ed25519(let k):
            map[COSEKeyParameter.keyType] = .int(COSEKeyParameter.keyTypeOKP)
            map[COSEKeyParameter.algorithm] = .int(algorithm.rawValue)
            map[COSEKeyParameter.curve] = .int(COSEKeyParameter.curveEd25519)
            map[COSEKeyParameter.x] = .byteString(Array(k.publicKey.rawRepresentation))
        }
        return map
    }
}

/// COSE_Key map labels and values (RFC 9052 §7.1, RFC 9053 §7).
enum COSEKeyParameter {
    static let keyType = 1
    static let algorithm = 3
    static let curve = -1
    static let x = -2
    static let y = -3
    static let keyTypeOKP = 1
    static let keyTypeEC2 = 2
    static let curveP256 = 1
    static let curveP384 = 2
    static let curveEd25519 = 6
}

