import CTAP2

/// A security-key algorithm as OpenSSH numbers it (`SSH_SK_ECDSA`, `SSH_SK_ED25519`).
public struct SSHKeyAlgorithm: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// ECDSA on P-256 (`sk-ecdsa-sha2-nistp256@openssh.com`), COSE ES256.
    public static let ecdsaP256 = SSHKeyAlgorithm(rawValue: 0)
    /// Ed25519 (`sk-ssh-ed25519@openssh.com`), COSE EdDSA.
    public static let ed25519 = SSHKeyAlgorithm(rawValue: 1)

    /// The COSE algorithm a credential of this kind is made with, if OpenSSH defines it.
    public var coseAlgorithm: COSEAlgorithm? {
        switch self {
        case .ecdsaP256: .es256
        case .ed25519: .edDSA
        default: nil
        }
    }

    /// The OpenSSH algorithm of a COSE algorithm, if it is one OpenSSH uses.
    public init?(coseAlgorithm: COSEAlgorithm) {
        switch coseAlgorithm {
        case .es256: self = .ecdsaP256
        case .edDSA: self = .ed25519
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .ecdsaP256: "ecdsa-sk"
        case .ed25519: "ed25519-sk"
        default: "sk-algorithm(\(rawValue))"
        }
    }
}

/// The flags of an OpenSSH security key (`SSH_SK_*`), kept in the key file and passed to every call.
public struct SSHKeyFlags: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// A touch is needed to sign (cleared by `no-touch-required`).
    public static let userPresenceRequired = SSHKeyFlags(rawValue: 0x01)
    /// User verification (PIN or built-in) is needed to sign (`verify-required`).
    public static let userVerificationRequired = SSHKeyFlags(rawValue: 0x04)
    /// Enrolment overwrites a resident key of the same application and user.
    public static let force = SSHKeyFlags(rawValue: 0x10)
    /// The credential is stored on the key (`resident`).
    public static let residentKey = SSHKeyFlags(rawValue: 0x20)
}

/// The `sk_option` list of a call: which key (`device`) and, when enrolling, which user.
public struct SSHProviderOptions: Hashable, Sendable {
    /// The device URI (`hid:`, `pcsc:`, `udp:`) the user named, if any.
    public var device: String?
    /// The user name a resident key is stored under (`user`), at most 31 bytes.
    public var user: String?

    /// The longest `user`: the user ID is 32 bytes, the name NUL-padded into it.
    public static let userIDLength = 32

    /// No options.
    public init(device: String? = nil, user: String? = nil) {
        self.device = device
        self.user = user
    }

    /// Options from OpenSSH's (name, value, required) triples, refusing a required option this
    /// provider does not know and `user` where the call takes none (`acceptsUser`), as OpenSSH's
    /// own provider does.
    public init(_ list: [(name: String, value: String, required: Bool)], acceptsUser: Bool) throws(SSHSecurityKeyError) {
        self.init()
        for option in list {
            switch option.name {
            case "device": device = option.value
            case "user" where acceptsUser:
                guard option.value.utf8.count < Self.userIDLength else {
                    throw SSHSecurityKeyError(
                        .general, "The user name \"\(option.value)\" is longer than \(Self.userIDLength - 1) bytes.")
                }
                user = option.value
            default:
                if option.required {
                    throw SSHSecurityKeyError(
                        .general, "The security-key option \"\(option.name)\" is required but not supported.")
                }
            }
        }
    }

    /// The 32-byte user ID of a credential: the user name, NUL-padded (all zero without one).
    public var userID: [UInt8] {
        let name = Array((user ?? "").utf8.prefix(Self.userIDLength - 1))
        return name + [UInt8](repeating: 0, count: Self.userIDLength - name.count)
    }
}

/// A new credential, in the form `sk_enroll` returns it.
public struct SSHEnrollment: Hashable, Sendable {
    /// The flags the key file records.
    public var flags: SSHKeyFlags
    /// The public key: an uncompressed SEC1 point (65 bytes) or a raw Ed25519 key (32 bytes).
    public var publicKey: [UInt8]
    /// The credential ID, which OpenSSH calls the key handle.
    public var keyHandle: [UInt8]
    /// The attestation signature (empty for `none` attestation).
    public var signature: [UInt8]
    /// The attestation certificate, DER (empty without one).
    public var attestationCertificate: [UInt8]
    /// The authenticator data as a CBOR byte string, as OpenSSH's attestation file holds it.
    public var authenticatorData: [UInt8]
}

/// A signature, in the form `sk_sign` returns it.
public struct SSHSignature: Hashable, Sendable {
    /// The authenticator data flags (UP 0x01, UV 0x04).
    public var flags: UInt8
    /// The signature counter.
    public var counter: UInt32
    /// ECDSA r (big-endian, no leading zeros) or the whole 64-byte Ed25519 signature.
    public var r: [UInt8]
    /// ECDSA s (big-endian, no leading zeros); empty for Ed25519.
    public var s: [UInt8]
}

/// A resident credential found on a key, in the form `sk_load_resident_keys` returns it.
public struct SSHResidentKey: Hashable, Sendable {
    /// Its algorithm.
    public var algorithm: SSHKeyAlgorithm
    /// Its application (the RP ID, starting with `ssh:`).
    public var application: String
    /// Its public key, as ``SSHEnrollment/publicKey``.
    public var publicKey: [UInt8]
    /// Its credential ID.
    public var keyHandle: [UInt8]
    /// `userVerificationRequired` when the credential demands verification the key cannot do
    /// on its own (credProtect level 3 on a key without built-in UV).
    public var flags: SSHKeyFlags
    /// Its user ID.
    public var userID: [UInt8]
}
