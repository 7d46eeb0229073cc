import CBOR

/// The outcome of getKeyAgreement and `encapsulate` (CTAP 2.1 §6.5.4, §6.5.5.4): the
/// platform's key-agreement public key to send with the next clientPIN subcommand (or the
/// hmac-secret extension), and the shared secret, which stays inside this object.
///
/// ``wipe()`` overwrites the secret; `deinit` does so at the latest. The limits described on
/// ``PINUVAuthToken`` apply.
public final class PINUVSharedSecret: Sendable {
    /// The PIN/UV auth protocol that derived the secret.
    public let pinUVAuthProtocol: any PINUVAuthProtocol
    /// The platform's public key as a COSE_Key map (kty EC2, alg -25, crv P-256, x, y).
    public let platformKeyAgreement: CBORMap
    private let secret: PINUVSecretBytes

    init(pinUVAuthProtocol: any PINUVAuthProtocol, platformKeyAgreement: CBORMap, secret: [UInt8]) {
        self.pinUVAuthProtocol = pinUVAuthProtocol
        self.platformKeyAgreement = platformKeyAgreement
        self.secret = PINUVSecretBytes(secret)
    }

    /// Overwrites the shared secret with zeros.
    public func wipe() { secret.wipe() }

    /// Whether ``wipe()`` has run.
    public var isWiped: Bool { secret.isWiped }

    /// Encrypts with the shared secret (the protocol's `encrypt`).
    public func encrypt(_ plaintext: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        try secret.withBytes("shared secret") { (key) throws(CTAP2Error) in
            try pinUVAuthProtocol.encrypt(key: key, plaintext)
        }
    }

    /// Decrypts with the shared secret (the protocol's `decrypt`); the caller wipes the result.
    public func decrypt(_ ciphertext: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        try secret.withBytes("shared secret") { (key) throws(CTAP2Error) in
            try pinUVAuthProtocol.decrypt(key: key, ciphertext)
        }
    }

    /// Authenticates with the shared secret (the protocol's `authenticate`).
    public func authenticate(_ message: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        try secret.withBytes("shared secret") { (key) throws(CTAP2Error) in
            pinUVAuthProtocol.authenticate(key: key, message)
        }
    }

    /// The platform COSE key for public coordinates `x`, `y` (§6.5.6 `getPublicKey`: alg is
    /// -25, "although this is not the algorithm actually used").
    static func coseKey(x: [UInt8], y: [UInt8]) -> CBORMap {
        [
            COSEKey.Label.keyType: .int(COSEKeyType.ec2.rawValue),
            COSEKey.Label.algorithm: -25,
            COSEKey.Label.curve: .int(COSECurve.p256.rawValue),
            COSEKey.Label.x: .byteString(x),
            COSEKey.Label.y: .byteString(y),
        ]
    }
}
