import CBOR

/// The hmac-secret extension's input (CTAP 2.2 §12.5 at getAssertion, §12.6 `hmac-secret-mc`
/// at makeCredential): one or two 32-byte salts encrypted with the shared secret of a key
/// agreement, authenticated with it, and the key agreement the authenticator needs to derive
/// the same secret.
///
/// Built by ``init(salt1:salt2:sharedSecret:)``; the salts are not kept. The encrypted salts
/// are not secret on the wire, but the description leaves them out all the same.
public struct HMACSecretInput: Hashable, Sendable, CustomStringConvertible {
    /// The member keys of the input map.
    public enum Key {
        /// keyAgreement (0x01): the platform's COSE key.
        public static let keyAgreement: CBORValue = 0x01
        /// saltEnc (0x02): the encrypted salts.
        public static let saltEncrypted: CBORValue = 0x02
        /// saltAuth (0x03): `authenticate(sharedSecret, saltEnc)`.
        public static let saltAuthentication: CBORValue = 0x03
        /// pinUvAuthProtocol (0x04): the protocol of the key agreement (absent means one).
        public static let pinUVAuthProtocol: CBORValue = 0x04
    }

    /// The length of one salt and of one output.
    public static let saltLength = 32

    /// The platform's key-agreement public key (COSE_Key).
    public let keyAgreement: CBORMap
    /// `encrypt(sharedSecret, salt1 ‖ salt2)`.
    public let saltEncrypted: [UInt8]
    /// `authenticate(sharedSecret, saltEnc)`.
    public let saltAuthentication: [UInt8]
    /// The PIN/UV auth protocol of the shared secret.
    public let pinUVAuthProtocol: Int
    /// How many salts were encrypted (1 or 2): the output is that many times 32 bytes.
    public let saltCount: Int

    /// Encrypts `salt1` (and `salt2`) with `sharedSecret` (from ``ClientPIN/sharedSecret(deadline:)``).
    /// Each salt must be 32 bytes.
    public init(salt1: [UInt8], salt2: [UInt8]? = nil, sharedSecret: PINUVSharedSecret) throws(CTAP2Error) {
        guard salt1.count == Self.saltLength, salt2.map({ $0.count == Self.saltLength }) ?? true else {
            throw CTAP2Error(
                .invalidRequest,
                "hmac-secret salts must be 32 bytes each, not \(salt1.count)\(salt2.map { " and \($0.count)" } ?? "").")
        }
        var plaintext = salt1 + (salt2 ?? [])
        defer { plaintext.wipe() }
        saltEncrypted = try sharedSecret.encrypt(plaintext)
        saltAuthentication = try sharedSecret.authenticate(saltEncrypted)
        keyAgreement = sharedSecret.platformKeyAgreement
        pinUVAuthProtocol = sharedSecret.pinUVAuthProtocol.version
        saltCount = salt2 == nil ? 1 : 2
    }

    /// The extension's input map. The protocol member is left out for protocol one, which is
    /// its default, because CTAP 2.0 keys predate the member.
    public var cbor: CBORMap {
        var m: CBORMap = [
            Key.keyAgreement: .map(keyAgreement),
            Key.saltEncrypted: .byteString(saltEncrypted),
            Key.saltAuthentication: .byteString(saltAuthentication),
        ]
        if pinUVAuthProtocol != 1 { m[Key.pinUVAuthProtocol] = .int(pinUVAuthProtocol) }
        return m
    }

    public var description: String {
        "HMACSecretInput(protocol: \(pinUVAuthProtocol), salts: \(saltCount))"
    }
}

/// The decrypted hmac-secret output (CTAP 2.2 §12.5): one 32-byte secret per salt.
///
/// Secret material: the description and reflection leave the bytes out; ``wipe()`` overwrites
/// them (the limits described on ``PINUVAuthToken`` apply).
public struct HMACSecretOutput: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The output for the first salt.
    public private(set) var output1: [UInt8]
    /// The output for the second salt, when two were sent.
    public private(set) var output2: [UInt8]?

    /// Splits and checks a decrypted output: 32 bytes for one salt, 64 for two.
    public init(decrypted: [UInt8], saltCount: Int) throws(CTAP2Error) {
        let expected = saltCount * HMACSecretInput.saltLength
        guard (1...2).contains(saltCount), decrypted.count == expected else {
            throw CTAP2Error.malformed(
                "The hmac-secret output is \(decrypted.count) bytes; \(expected) were expected for \(saltCount) salt(s).")
        }
        output1 = Array(decrypted[0..<32])
        output2 = saltCount == 2 ? Array(decrypted[32..<64]) : nil
    }

    /// Decrypts the encrypted output the authenticator returned with the shared secret the
    /// input was built with, and checks its length against the number of salts sent.
    public init(encrypted: [UInt8], input: HMACSecretInput, sharedSecret: PINUVSharedSecret) throws(CTAP2Error) {
        // Protocol one: exactly 32 or 64 bytes; protocol two: a 16-byte IV in front.
        let overhead = sharedSecret.pinUVAuthProtocol.version == 2 ? 16 : 0
        let expected = input.saltCount * HMACSecretInput.saltLength + overhead
        guard encrypted.count == expected else {
            throw CTAP2Error.malformed(
                "The encrypted hmac-secret output is \(encrypted.count) bytes; \(expected) were expected.")
        }
        var plaintext = try sharedSecret.decrypt(encrypted)
        defer { plaintext.wipe() }
        try self.init(decrypted: plaintext, saltCount: input.saltCount)
    }

    /// Overwrites both outputs with zeros.
    public mutating func wipe() {
        output1.wipe()
        output2?.wipe()
    }

    public var description: String { "HMACSecretOutput(\(output2 == nil ? 1 : 2) × 32 bytes, redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
