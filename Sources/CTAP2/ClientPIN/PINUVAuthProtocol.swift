import _SecurityKeyInternals
import Crypto
import FoundationEssentials
import _CryptoExtras

/// A PIN/UV auth protocol (CTAP 2.1 §6.5.4): how platform and authenticator agree on a shared
/// secret and use it to encrypt PINs and tokens and to authenticate commands.
public protocol PINUVAuthProtocol: Sendable {
    /// The protocol's number in getInfo's `pinUvAuthProtocols` (1 or 2).
    var version: Int { get }

    /// Derives the shared secret from the ECDH point's x-coordinate (§6.5.6 / §6.5.7 `kdf`).
    func kdf(_ z: [UInt8]) -> [UInt8]

    /// Encrypts a multiple of 16 bytes with the shared secret.
    func encrypt(key: [UInt8], _ plaintext: [UInt8]) throws(CTAP2Error) -> [UInt8]

    /// Decrypts what ``encrypt(key:_:)`` produced.
    func decrypt(key: [UInt8], _ ciphertext: [UInt8]) throws(CTAP2Error) -> [UInt8]

    /// Computes the pinUvAuthParam of `message` with a shared secret or a pinUvAuthToken.
    func authenticate(key: [UInt8], _ message: [UInt8]) -> [UInt8]
}

extension PINUVAuthProtocol {
    /// Whether `signature` is the pinUvAuthParam of `message` (constant time).
    public func verify(key: [UInt8], _ message: [UInt8], signature: [UInt8]) -> Bool {
        let expected = authenticate(key: key, message)
        guard expected.count == signature.count else { return false }
        return zip(expected, signature).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// ECDH with the authenticator's key-agreement key (`x`, `y`: P-256 coordinates): returns
    /// the platform's public coordinates and the shared secret (§6.5.6 `encapsulate`).
    public func encapsulate(
        peerX: [UInt8], peerY: [UInt8]
    ) throws(CTAP2Error) -> (x: [UInt8], y: [UInt8], sharedSecret: [UInt8]) {
        try encapsulate(peerX: peerX, peerY: peerY, using: P256.KeyAgreement.PrivateKey())
    }

    /// ``encapsulate(peerX:peerY:)`` with a given platform key (for known-answer tests).
    public func encapsulate(
        peerX: [UInt8], peerY: [UInt8], using privateKey: P256.KeyAgreement.PrivateKey
    ) throws(CTAP2Error) -> (x: [UInt8], y: [UInt8], sharedSecret: [UInt8]) {
        guard peerX.count == 32, peerY.count == 32,
            let peer = try? P256.KeyAgreement.PublicKey(x963Representation: [0x04] + peerX + peerY)
        else {
            throw CTAP2Error(
                .pinUVAuthProtocol, "The authenticator's key-agreement key is not a valid P-256 point.")
        }
        guard let shared = try? privateKey.sharedSecretFromKeyAgreement(with: peer) else {
            throw CTAP2Error(.pinUVAuthProtocol, "ECDH with the authenticator's key-agreement key failed.")
        }
        var z = shared.withUnsafeBytes { [UInt8]($0) }
        defer { z.wipe() }
        let point = Array(privateKey.publicKey.x963Representation)
        return (Array(point[1..<33]), Array(point[33..<65]), kdf(z))
    }
}

/// PIN/UV auth protocol one (CTAP 2.1 §6.5.6): SHA-256 KDF, AES-256-CBC with a zero IV,
/// HMAC-SHA-256 truncated to 16 bytes.
public struct PINUVAuthProtocolOne: PINUVAuthProtocol {
    /// Creates the protocol.
    public init() {}

    public var version: Int { 1 }

    public func kdf(_ z: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: z)) }

    public func encrypt(key: [UInt8], _ plaintext: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        try AESCBC.run(encrypt: true, key: key, iv: [UInt8](repeating: 0, count: 16), plaintext)
    }

    public func decrypt(key: [UInt8], _ ciphertext: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        try AESCBC.run(encrypt: false, key: key, iv: [UInt8](repeating: 0, count: 16), ciphertext)
    }

    public func authenticate(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)).prefix(16))
    }
}

/// PIN/UV auth protocol two (CTAP 2.1 §6.5.7): HKDF-SHA-256 into an HMAC key and an AES key,
/// AES-256-CBC with a random IV prepended, full HMAC-SHA-256.
public struct PINUVAuthProtocolTwo: PINUVAuthProtocol {
    /// Creates the protocol.
    public init() {}

    public var version: Int { 2 }

    public func kdf(_ z: [UInt8]) -> [UInt8] {
        let salt = [UInt8](repeating: 0, count: 32)
        func derive(_ info: String) -> [UInt8] {
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: z), salt: salt, info: Array(info.utf8),
                outputByteCount: 32
            ).withUnsafeBytes { [UInt8]($0) }
        }
        return derive("CTAP2 HMAC key") + derive("CTAP2 AES key")
    }

    public func encrypt(key: [UInt8], _ plaintext: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        try encrypt(key: key, plaintext, iv: SystemRandom.bytes(16))
    }

    /// ``encrypt(key:_:)`` with a given IV (for known-answer tests).
    public func encrypt(key: [UInt8], _ plaintext: [UInt8], iv: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        guard key.count == 64 else {
            throw CTAP2Error(.pinUVAuthProtocol, "Protocol two needs a 64-byte shared secret.")
        }
        return iv + (try AESCBC.run(encrypt: true, key: Array(key[32...]), iv: iv, plaintext))
    }

    public func decrypt(key: [UInt8], _ ciphertext: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        guard key.count == 64 else {
            throw CTAP2Error(.pinUVAuthProtocol, "Protocol two needs a 64-byte shared secret.")
        }
        guard ciphertext.count >= 16 else {
            throw CTAP2Error(.pinUVAuthProtocol, "The ciphertext is shorter than its IV.")
        }
        return try AESCBC.run(
            encrypt: false, key: Array(key[32...]), iv: Array(ciphertext[..<16]), Array(ciphertext[16...]))
    }

    public func authenticate(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        // A 64-byte shared secret authenticates with its HMAC half; a token is used whole.
        let hmacKey = key.count == 64 ? Array(key[..<32]) : key
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: hmacKey)))
    }
}

enum AESCBC {
    static func run(encrypt: Bool, key: [UInt8], iv: [UInt8], _ input: [UInt8]) throws(CTAP2Error) -> [UInt8]
    {
        // AES-256 for the PIN/UV auth protocols, AES-128 for the getInfo members a persistent
        // token decrypts (CTAP 2.2 §6.4).
        guard key.count == 32 || key.count == 16 else {
            throw CTAP2Error(.pinUVAuthProtocol, "AES-CBC needs a 16- or 32-byte key.")
        }
        guard input.count % 16 == 0 else {
            throw CTAP2Error(.pinUVAuthProtocol, "AES-CBC input must be a multiple of 16 bytes.")
        }
        do {
            let ivValue = try AES._CBC.IV(ivBytes: iv)
            let symmetric = SymmetricKey(data: key)
            let out =
                encrypt
                ? try AES._CBC.encrypt(input, using: symmetric, iv: ivValue, noPadding: true)
                : try AES._CBC.decrypt(input, using: symmetric, iv: ivValue, noPadding: true)
            return [UInt8](out)
        } catch {
            throw CTAP2Error(.pinUVAuthProtocol, "AES-CBC failed: \(error).")
        }
    }
}

extension Array where Element == UInt8 {
    /// Overwrites the bytes with zeros (for PINs, secrets and tokens after use).
    public mutating func wipe() {
        for i in indices { self[i] = 0 }
    }
}
