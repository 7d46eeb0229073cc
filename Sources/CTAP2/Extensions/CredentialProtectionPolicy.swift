import CBOR

/// A credential protection level (CTAP 2.2 §12.1 `credProtect`): when the authenticator lets
/// the credential be used without user verification.
///
/// A `RawRepresentable` struct rather than a closed enum: a key may answer with a level this
/// library does not know, and the value is kept.
public struct CredentialProtectionPolicy: RawRepresentable, Hashable, Sendable, Comparable,
    CustomStringConvertible
{
    /// The level as CTAP encodes it (1, 2 or 3).
    public var rawValue: UInt64
    /// A level by number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// 1, `userVerificationOptional`: usable with or without user verification.
    public static let userVerificationOptional = CredentialProtectionPolicy(rawValue: 1)
    /// 2, `userVerificationOptionalWithCredentialIDList`: without user verification only when
    /// the platform names the credential in an allow list (not found as a discoverable credential).
    public static let userVerificationOptionalWithCredentialIDList = CredentialProtectionPolicy(rawValue: 2)
    /// 3, `userVerificationRequired`: usable only with user verification.
    public static let userVerificationRequired = CredentialProtectionPolicy(rawValue: 3)

    /// The WebAuthn client extension input name (`credentialProtectionPolicy`'s string values).
    public var webAuthnName: String? {
        switch rawValue {
        case 1: "userVerificationOptional"
        case 2: "userVerificationOptionalWithCredentialIDList"
        case 3: "userVerificationRequired"
        default: nil
        }
    }

    /// The level for a WebAuthn name (`userVerificationRequired`, ...) or a number 1–3.
    public init?(webAuthnName name: String) {
        switch name {
        case "userVerificationOptional", "1": self = .userVerificationOptional
        case "userVerificationOptionalWithCredentialIDList", "2": self = .userVerificationOptionalWithCredentialIDList
        case "userVerificationRequired", "3": self = .userVerificationRequired
        default: return nil
        }
    }

    /// Whether this is one of the three levels CTAP defines.
    public var isDefined: Bool { (1...3).contains(rawValue) }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { webAuthnName ?? "credProtect(\(rawValue))" }

    /// Whether a makeCredential asking for this level may go ahead on a key described by
    /// `info` when the relying party enforces the policy (CTAP 2.2 §12.1, client processing of
    /// `enforceCredentialProtectionPolicy`): a level above 1 needs a key that lists
    /// `credProtect`; level 3 also needs a key that can verify the user at all, or the credential
    /// could never be used. Throws ``CTAP2Error/Code/unsupportedExtension`` before anything is created.
    public func checkEnforceable(on info: AuthenticatorInfo) throws(CTAP2Error) {
        guard isDefined else {
            throw CTAP2Error(.invalidRequest, "Credential protection level \(rawValue) is not 1, 2 or 3.")
        }
        guard self > .userVerificationOptional else { return }
        guard info.extensions.contains(.credProtect) else {
            throw CTAP2Error(
                .unsupportedExtension,
                "The security key cannot protect credentials (no credProtect), which the relying party requires.")
        }
        if self == .userVerificationRequired {
            let canVerify = info.options.isSupported(.clientPIN) || info.options.isSupported(.userVerification)
            guard canVerify else {
                throw CTAP2Error(
                    .unsupportedExtension,
                    "The security key cannot verify users, so a credential that requires it would be unusable.")
            }
        }
    }
}
