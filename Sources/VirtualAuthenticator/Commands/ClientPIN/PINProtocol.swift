import _SecurityKeyInternals
import CBOR
import Crypto
import _CryptoExtras

/// A PIN/UV auth protocol, authenticator side (CTAP 2.1 §6.5.4): how the key agrees on a
/// shared secret with the platform, decrypts PINs, encrypts tokens and checks pinUvAuthParams.
///
/// Written here from the spec rather than shared with the host's CTAP2 module, so that a
/// mistake on one side is caught by the other.
enum PINProtocol: UInt64, CaseIterable, Sendable, CustomStringConvertible {
    /// PIN/UV auth protocol one (§6.5.6): SHA-256 KDF, AES-256-CBC with a zero IV,
    /// HMAC-SHA-256 truncated to 16 bytes.
    case one = 1
    /// PIN/UV auth protocol two (§6.5.7): HKDF-SHA-256 into HMAC and AES keys, AES-256-CBC
    /// with a random IV prepended, full HMAC-SHA-256.
    case two = 2

    var description: String { "PIN/UV auth protocol \(rawValue)" }

    /// COSE algorithm of the key-agreement key: ECDH-ES+HKDF-256 (§6.5.6 getPublicKey).
    static let keyAgreementAlgorithm = -25
    /// The length of a pinUvAuthToken this key issues.
    static let tokenLength = 32
    private static let aesBlock = 16

    /// The protocol a request names: missing is CTAP2_ERR_MISSING_PARAMETER, an unsupported
    /// one CTAP1_ERR_INVALID_PARAMETER (§6.5.5.1, §6.1.2 step 2).
    static func negotiate(_ raw: UInt64?, supported: [Int]) throws(VirtualKeyError) -> PINProtocol {
        guard let raw else {
            throw .rejected(.missingParameter, "The request names no PIN/UV auth protocol.")
        }
        guard let chosen = PINProtocol(rawValue: raw), supported.contains(Int(chosen.rawValue)) else {
            throw .rejected(.invalidParameter, "PIN/UV auth protocol \(raw) is not supported.")
        }
        return chosen
    }

    /// The shared secret derived from the ECDH x-coordinate `z` (§6.5.6 / §6.5.7 `kdf`).
    func kdf(_ z: [UInt8]) -> [UInt8] {
        switch self {
        case .one:
            return Array(SHA256.hash(data: z))
        case .two:
            let salt = [UInt8](repeating: 0, count: 32)
            func derive(_ info: String) -> [UInt8] {
                HKDF<SHA256>.deriveKey(
                    inputKeyMaterial: SymmetricKey(data: z), salt: salt, info: Array(info.utf8),
                    outputByteCount: 32
                ).withUnsafeBytes { [UInt8]($0) }
            }
            return derive("CTAP2 HMAC key") + derive("CTAP2 AES key")
        }
    }

    /// The platform's shared secret from its key-agreement COSE key (§6.5.6 `decapsulate`).
    /// A malformed key or a point off the curve is CTAP1_ERR_INVALID_PARAMETER.
    func decapsulate(
        _ peer: CBORMap, with key: P256.KeyAgreement.PrivateKey
    ) throws(VirtualKeyError) -> [UInt8] {
        let invalid = VirtualKeyError.rejected(
            .invalidParameter, "The platform's key-agreement key is not a P-256 COSE key.")
        guard peer[1] == 2, peer[-1] == 1, let x = peer[-2]?.bytesValue, let y = peer[-3]?.bytesValue,
            x.count == 32, y.count == 32
        else { throw invalid }
        if let alg = peer[3], alg != .int(Self.keyAgreementAlgorithm) { throw invalid }
        guard let publicKey = try? P256.KeyAgreement.PublicKey(x963Representation: [0x04] + x + y),
            let shared = try? key.sharedSecretFromKeyAgreement(with: publicKey)
        else { throw invalid }
        var z = shared.withUnsafeBytes { [UInt8]($0) }
        defer { z.zeroize() }
        return kdf(z)
    }

    /// The authenticator's key-agreement public key as a COSE_Key (§6.5.6 `getPublicKey`).
    static func coseKey(_ key: P256.KeyAgreement.PrivateKey) -> CBORMap {
        let point = Array(key.publicKey.x963Representation)
        return [
            1: 2, 3: .int(keyAgreementAlgorithm), -1: 1,
            -2: .byteString(Array(point[1..<33])), -3: .byteString(Array(point[33..<65])),
        ]
    }

    /// Encrypts a whole number of AES blocks with the shared secret.
    func encrypt(key: [UInt8], _ plaintext: [UInt8]) throws(VirtualKeyError) -> [UInt8] {
        switch self {
        case .one:
            return try Self.cbc(encrypt: true, key: key, iv: [UInt8](repeating: 0, count: 16), plaintext)
        case .two:
            guard key.count == 64 else { throw Self.badSecret }
            let iv = SystemRandom.bytes(Self.aesBlock)
            return iv + (try Self.cbc(encrypt: true, key: Array(key[32...]), iv: iv, plaintext))
        }
    }

    /// Decrypts platform ciphertext; a length that is not whole blocks (after the IV for
    /// protocol two) is CTAP1_ERR_INVALID_PARAMETER.
    func decrypt(key: [UInt8], _ ciphertext: [UInt8]) throws(VirtualKeyError) -> [UInt8] {
        switch self {
        case .one:
            return try Self.cbc(encrypt: false, key: key, iv: [UInt8](repeating: 0, count: 16), ciphertext)
        case .two:
            guard key.count == 64 else { throw Self.badSecret }
            guard ciphertext.count >= Self.aesBlock else {
                throw .rejected(.invalidParameter, "The ciphertext is shorter than its IV.")
            }
            return try Self.cbc(
                encrypt: false, key: Array(key[32...]), iv: Array(ciphertext[..<Self.aesBlock]),
                Array(ciphertext[Self.aesBlock...]))
        }
    }

    /// The pinUvAuthParam of `message` under a shared secret or a pinUvAuthToken.
    func authenticate(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        switch self {
        case .one:
            let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
            return Array(Array(mac).prefix(16))
        case .two:
            // A 64-byte shared secret authenticates with its HMAC half; a token is used whole.
            let hmacKey = key.count == 64 ? Array(key[..<32]) : key
            return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: hmacKey)))
        }
    }

    /// Whether `signature` is the pinUvAuthParam of `message`, compared in constant time; a
    /// signature of the wrong length never verifies (§6.5.6 / §6.5.7 `verify`).
    func verify(key: [UInt8], _ message: [UInt8], signature: [UInt8]) -> Bool {
        let expected = authenticate(key: key, message)
        guard expected.count == signature.count else { return false }
        return zip(expected, signature).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static let badSecret = VirtualKeyError.rejected(
        .other, "Protocol two needs a 64-byte shared secret.")

    /// AES-CBC without padding under a 16- or 32-byte key (the getInfo members a persistent
    /// token decrypts use AES-128, CTAP 2.2 §6.4).
    static func cbc(
        encrypt: Bool, key: [UInt8], iv: [UInt8], _ input: [UInt8]
    ) throws(VirtualKeyError) -> [UInt8] {
        guard input.count % aesBlock == 0 else {
            throw .rejected(.invalidParameter, "The ciphertext is not a whole number of AES blocks.")
        }
        do {
            let symmetric = SymmetricKey(data: key)
            let ivValue = try AES._CBC.IV(ivBytes: iv)
            let output =
                encrypt
                ? try AES._CBC.encrypt(input, using: symmetric, iv: ivValue, noPadding: true)
                : try AES._CBC.decrypt(input, using: symmetric, iv: ivValue, noPadding: true)
            return [UInt8](output)
        } catch {
            throw VirtualKeyError(.crypto, "AES-CBC failed.", status: .other, underlying: error)
        }
    }
}

extension Array where Element == UInt8 {
    /// Overwrites the bytes with zeros (PINs, PIN hashes, shared secrets after use).
    mutating func zeroize() {
        for i in indices { self[i] = 0 }
    }
}
