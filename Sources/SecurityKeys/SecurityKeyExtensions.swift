import _SecurityKeyInternals
import CTAP2
import Crypto

/// The `credProtect` extension's input (CTAP 2.2 §12.1; WebAuthn client inputs
/// `credentialProtectionPolicy` and `enforceCredentialProtectionPolicy`).
public struct SecurityKeyCredentialProtection: Hashable, Sendable {
    /// A protection policy, named as WebAuthn names it.
    public struct Policy: RawRepresentable, Hashable, Sendable {
        /// The WebAuthn name.
        public var rawValue: String
        /// A policy by WebAuthn name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Usable with or without user verification (level 1).
        public static let userVerificationOptional = Policy(rawValue: "userVerificationOptional")
        /// Without user verification only when named in an allow list (level 2).
        public static let userVerificationOptionalWithCredentialIDList = Policy(
            rawValue: "userVerificationOptionalWithCredentialIDList")
        /// Only with user verification (level 3).
        public static let userVerificationRequired = Policy(rawValue: "userVerificationRequired")

        /// The CTAP level, nil for a name WebAuthn does not define.
        public var level: CredentialProtectionPolicy? { CredentialProtectionPolicy(webAuthnName: rawValue) }
    }

    /// The policy asked for.
    public var policy: Policy
    /// Whether registration must fail (before anything is created) on a key that cannot
    /// apply the policy, rather than make an unprotected credential.
    public var isEnforced: Bool

    /// An input.
    public init(policy: Policy, isEnforced: Bool = false) {
        self.policy = policy
        self.isEnforced = isEnforced
    }
}

/// The raw `hmac-secret` extension's assertion input (CTAP 2.2 §12.5, WebAuthn-side
/// `hmacGetSecret`): two 32-byte salts used as they are, for the tools that predate `prf`
/// (systemd-cryptenroll, `ssh-keygen -O` resident keys, age plugins).
public struct SecurityKeyHMACSecretInput: Hashable, Sendable, CustomStringConvertible {
    /// The first salt (32 bytes).
    public var salt1: [UInt8]
    /// The optional second salt (32 bytes).
    public var salt2: [UInt8]?

    /// An input.
    public init(salt1: [UInt8], salt2: [UInt8]? = nil) {
        self.salt1 = salt1
        self.salt2 = salt2
    }

    public var description: String { "SecurityKeyHMACSecretInput(\(salt2 == nil ? 1 : 2) salt(s), redacted)" }

    /// A salt as people write one: 32 bytes as 64 hex digits, base64 or base64url (surrounding
    /// whitespace ignored); nil for anything else.
    public static func salt(text: String) -> [UInt8]? {
        let trimmed = text.trimmingWhitespace()
        if trimmed.count == 64, let bytes = Hex.decode(trimmed) { return bytes }
        guard let bytes = Base64.decodeEitherAlphabet(trimmed), bytes.count == 32 else { return nil }
        return bytes
    }
}

/// The raw `hmac-secret` extension's assertion output (`hmacGetSecret`'s `output1`, `output2`).
public struct SecurityKeyHMACSecretOutput: Hashable, Sendable, CustomStringConvertible {
    /// The secret for the first salt (32 bytes).
    public var output1: SymmetricKey
    /// The secret for the second salt, when one was given.
    public var output2: SymmetricKey?

    /// An output.
    public init(output1: SymmetricKey, output2: SymmetricKey? = nil) {
        self.output1 = output1
        self.output2 = output2
    }

    /// Hashes only what is not secret; equality compares the keys (in constant time).
    public func hash(into hasher: inout Hasher) { hasher.combine(output2 == nil) }

    public var description: String { "SecurityKeyHMACSecretOutput(\(output2 == nil ? 1 : 2) output(s), redacted)" }
}

/// The `credProps` extension's output (WebAuthn L3 §10.1.3 `CredentialPropertiesOutput`).
public struct SecurityKeyCredentialProperties: Hashable, Sendable {
    /// Whether the credential is discoverable (client-side); nil when that is not known.
    public var residentKey: Bool?

    /// An output.
    public init(residentKey: Bool?) { self.residentKey = residentKey }
}

extension SymmetricKey {
    /// The key's bytes (for JSON and the CLI; the caller owns the copy).
    var bytes: [UInt8] { withUnsafeBytes { Array($0) } }
}
