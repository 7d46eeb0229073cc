/// An option an authenticator reports in getInfo (CTAP 2.2 §6.4 `options`), by its spec ID.
///
/// Options this library does not know keep their ID, so nothing a key reports is lost.
public struct AuthenticatorOption: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The option ID as the key sends it.
    public var rawValue: String
    /// An option by ID.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `plat`: the authenticator is part of the platform.
    public static let platformDevice = AuthenticatorOption(rawValue: "plat")
    /// `rk`: can store discoverable credentials.
    public static let residentKey = AuthenticatorOption(rawValue: "rk")
    /// `clientPin`: true when a PIN is set, false when one can be set, absent when unsupported.
    public static let clientPIN = AuthenticatorOption(rawValue: "clientPin")
    /// `up`: can test user presence.
    public static let userPresence = AuthenticatorOption(rawValue: "up")
    /// `uv`: true when built-in user verification is configured, false when it can be.
    public static let userVerification = AuthenticatorOption(rawValue: "uv")
    /// `pinUvAuthToken`: supports getPinUvAuthTokenUsing{Pin,UV}WithPermissions.
    public static let pinUVAuthToken = AuthenticatorOption(rawValue: "pinUvAuthToken")
    /// `noMcGaPermissionsWithClientPin`: the legacy getPinToken grants no mc/ga permission.
    public static let noMcGaPermissionsWithClientPIN = AuthenticatorOption(rawValue: "noMcGaPermissionsWithClientPin")
    /// `largeBlobs`: supports authenticatorLargeBlobs.
    public static let largeBlobs = AuthenticatorOption(rawValue: "largeBlobs")
    /// `ep`: enterprise attestation (true: enabled, false: supported but disabled).
    public static let enterpriseAttestation = AuthenticatorOption(rawValue: "ep")
    /// `bioEnroll`: fingerprint enrollment (true: a template is enrolled).
    public static let bioEnroll = AuthenticatorOption(rawValue: "bioEnroll")
    /// `userVerificationMgmtPreview`: the FIDO_2_1_PRE form of bioEnroll.
    public static let userVerificationManagementPreview = AuthenticatorOption(rawValue: "userVerificationMgmtPreview")
    /// `uvBioEnroll`: bio enrollment accepts a token obtained with built-in UV.
    public static let uvBioEnroll = AuthenticatorOption(rawValue: "uvBioEnroll")
    /// `authnrCfg`: supports authenticatorConfig.
    public static let authenticatorConfig = AuthenticatorOption(rawValue: "authnrCfg")
    /// `uvAcfg`: authenticatorConfig accepts a token obtained with built-in UV.
    public static let uvAuthenticatorConfig = AuthenticatorOption(rawValue: "uvAcfg")
    /// `credMgmt`: supports authenticatorCredentialManagement.
    public static let credentialManagement = AuthenticatorOption(rawValue: "credMgmt")
    /// `credentialMgmtPreview`: the FIDO_2_1_PRE form of credMgmt (command 0x41).
    public static let credentialManagementPreview = AuthenticatorOption(rawValue: "credentialMgmtPreview")
    /// `setMinPINLength`: authenticatorConfig can raise the minimum PIN length.
    public static let setMinPINLength = AuthenticatorOption(rawValue: "setMinPINLength")
    /// `makeCredUvNotRqd`: non-discoverable credentials can be made without user verification.
    public static let makeCredentialUVNotRequired = AuthenticatorOption(rawValue: "makeCredUvNotRqd")
    /// `alwaysUv`: every makeCredential and getAssertion needs user verification.
    public static let alwaysUV = AuthenticatorOption(rawValue: "alwaysUv")
    /// `perCredMgmtRO`: read-only credential management tokens (pcmr permission).
    public static let perCredentialManagementReadOnly = AuthenticatorOption(rawValue: "perCredMgmtRO")

    public static func < (lhs: AuthenticatorOption, rhs: AuthenticatorOption) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { rawValue }
}

/// What getInfo says of one option: absent (unsupported), present and false, or present and true.
extension Dictionary where Key == AuthenticatorOption, Value == Bool {
    /// Whether the option is present and true.
    public func isEnabled(_ option: AuthenticatorOption) -> Bool { self[option] == true }
    /// Whether the option is present at all (true or false), that is, supported.
    public func isSupported(_ option: AuthenticatorOption) -> Bool { self[option] != nil }
}
