import _SecurityKeyInternals
import Crypto
import _CryptoExtras
import CBOR
import Secp256k1

/// A credential's private key, derived from a 32-byte seed so that it fits in a sealed
/// credential ID whatever the algorithm. RSA keys cannot be derived from a seed: theirs is
/// made at random and kept in the state by seed (``storedRepresentation``).
struct CredentialPrivateKey {
    enum Key {
        case p256(P256.Signing.PrivateKey)
        case p384(P384.Signing.PrivateKey)
        case p521(P521.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
        case secp256k1(Secp256k1.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey)
        case mlDSA65(MLDSA65.PrivateKey)
        case mlDSA87(MLDSA87.PrivateKey)
    }

    static let seedLength = 32
    /// The RSA modulus size of RS256 and PS256 credentials.
    static let rsaKeySize = _RSA.Signing.KeySize.bits2048

    let algorithm: COSEAlgorithm
    let key: Key

    /// Whether `algorithm`'s keys are kept in the state rather than derived from the seed.
    static func isStored(_ algorithm: COSEAlgorithm) -> Bool { algorithm == .rs256 || algorithm == .ps256 }

    /// Derives the key for `algorithm` from `seed` or, for RSA, reads it from `stored` (PKCS #1
    /// DER); nil when the seed gives no valid scalar, the stored key is missing or damaged, or
    /// the algorithm is not implemented.
    init?(algorithm: COSEAlgorithm, seed: [UInt8], stored: [UInt8]? = nil) {
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
        case .es512:
            // A P-521 scalar has 521 bits: the top seven bits of the 66 bytes are zero.
            var scalar = derive(66)
            scalar[0] &= 0x01
            guard let k = try? P521.Signing.PrivateKey(rawRepresentation: scalar) else { return nil }
            key = .p521(k)
        case .edDSA:
            guard let k = try? Curve25519.Signing.PrivateKey(rawRepresentation: derive(32)) else {
                return nil
            }
            key = .ed25519(k)
        case .es256K:
            guard let k = try? Secp256k1.PrivateKey(rawRepresentation: derive(32)) else { return nil }
            key = .secp256k1(k)
        case .mlDSA65:
            // FIPS 204 ML-DSA.KeyGen_internal takes a 32-byte seed ξ.
            guard let k = try? MLDSA65.PrivateKey(seedRepresentation: derive(32), publicKey: nil) else {
                return nil
            }
            key = .mlDSA65(k)
        case .mlDSA87:
            guard let k = try? MLDSA87.PrivateKey(seedRepresentation: derive(32), publicKey: nil) else {
                return nil
            }
            key = .mlDSA87(k)
        case .rs256, .ps256:
            guard let stored, let k = try? _RSA.Signing.PrivateKey(derRepresentation: stored),
                k.keySizeInBits >= 2048
            else { return nil }
            key = .rsa(k)
        default:
            return nil
        }
        self.algorithm = algorithm
    }

    /// Makes a new key from a fresh random seed, returning the seed with it.
    static func generate(algorithm: COSEAlgorithm) -> (seed: [UInt8], key: CredentialPrivateKey)? {
        var stored: [UInt8]?
        if isStored(algorithm) {
            guard let rsa = try? _RSA.Signing.PrivateKey(keySize: rsaKeySize) else { return nil }
            stored = Array(rsa.derRepresentation)
        }
        // A seed fails only when HKDF yields a scalar outside the curve order (p < 2^-32).
        for _ in 0..<8 {
            let seed = SystemRandom.bytes(seedLength)
            if let key = CredentialPrivateKey(algorithm: algorithm, seed: seed, stored: stored) {
                return (seed, key)
            }
        }
        return nil
    }

    /// What the state keeps for this key: the RSA private key (PKCS #1 DER); nil for keys derived
    /// from their seed.
    var storedRepresentation: [UInt8]? {
        guard case .rsa(let k) = key else { return nil }
        return Array(k.derRepresentation)
    }

    /// Signs `data` as WebAuthn §6.5.5 requires: DER ECDSA signatures, raw Ed25519, RSA
    /// (RFC 8812 §2 PKCS #1 v1.5, RFC 8230 §2 PSS with a 32-byte salt) and ML-DSA ones.
    func sign(_ data: [UInt8]) throws(VirtualKeyError) -> [UInt8] {
        do {
            switch key {
            case .p256(let k): return Array(try k.signature(for: data).derRepresentation)
            case .p384(let k): return Array(try k.signature(for: data).derRepresentation)
            case .p521(let k): return Array(try k.signature(for: data).derRepresentation)
            case .ed25519(let k): return Array(try k.signature(for: data))
            case .secp256k1(let k): return try k.signature(for: data)
            case .rsa(let k):
                // swift-crypto's PSS salt is the digest's length: 32 bytes for SHA-256.
                let padding: _RSA.Signing.Padding = algorithm == .ps256 ? .PSS : .insecurePKCS1v1_5
                return Array(try k.signature(for: SHA256.hash(data: data), padding: padding).rawRepresentation)
            case .mlDSA65(let k): return Array(try k.signature(for: data))
            case .mlDSA87(let k): return Array(try k.signature(for: data))
            }
        } catch {
            throw VirtualKeyError(.crypto, "Signing with the credential key failed.", underlying: error)
        }
    }

    /// The public key as a COSE_Key (RFC 9052 §7; RFC 9053 §7.1–7.2 EC2 and OKP, RFC 8230 §4 RSA,
    /// RFC 8812 §3.1 secp256k1, draft-ietf-cose-dilithium AKP).
    var cosePublicKey: CBORMap {
        typealias P = COSEKeyParameter
        var map = CBORMap()
        map[P.algorithm] = .int(algorithm.rawValue)
        func ec2(_ curve: Int, _ xy: [UInt8]) {
            map[P.keyType] = .int(P.keyTypeEC2)
            map[P.curve] = .int(curve)
            map[P.x] = .byteString(Array(xy[0..<(xy.count / 2)]))
            map[P.y] = .byteString(Array(xy[(xy.count / 2)...]))
        }
        func akp(_ publicKey: [UInt8]) {
            map[P.keyType] = .int(P.keyTypeAKP)
            map[P.akpPublic] = .byteString(publicKey)
        }
        switch key {
        case .p256(let k): ec2(P.curveP256, Array(k.publicKey.rawRepresentation))
        case .p384(let k): ec2(P.curveP384, Array(k.publicKey.rawRepresentation))
        case .p521(let k): ec2(P.curveP521, Array(k.publicKey.rawRepresentation))
        case .secp256k1(let k): ec2(P.curveSecp256k1, Array(k.publicKey.x963Representation.dropFirst()))
        case .ed25519(let k):
            map[P.keyType] = .int(P.keyTypeOKP)
            map[P.curve] = .int(P.curveEd25519)
            map[P.x] = .byteString(Array(k.publicKey.rawRepresentation))
        case .rsa(let k):
            map[P.keyType] = .int(P.keyTypeRSA)
            // BoringSSL gives both as minimal unsigned big-endian integers, as RFC 8230 §4 asks.
            if let primitives = try? k.publicKey.getKeyPrimitives() {
                map[P.rsaModulus] = .byteString(Array(primitives.modulus))
                map[P.rsaExponent] = .byteString(Array(primitives.publicExponent))
            }
        case .mlDSA65(let k): akp(Array(k.publicKey.rawRepresentation))
        case .mlDSA87(let k): akp(Array(k.publicKey.rawRepresentation))
        }
        return map
    }
}

/// COSE_Key map labels and values (RFC 9052 §7.1, RFC 9053 §7, RFC 8230 §4, RFC 8812 §3.1,
/// draft-ietf-cose-dilithium §6).
enum COSEKeyParameter {
    static let keyType = 1
    static let algorithm = 3
    static let curve = -1
    static let x = -2
    static let y = -3
    static let rsaModulus = -1
    static let rsaExponent = -2
    static let akpPublic = -1
    static let keyTypeOKP = 1
    static let keyTypeEC2 = 2
    static let keyTypeRSA = 3
    static let keyTypeAKP = 7
    static let curveP256 = 1
    static let curveP384 = 2
    static let curveP521 = 3
    static let curveEd25519 = 6
    static let curveSecp256k1 = 8
}
