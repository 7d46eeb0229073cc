/// What a pinUvAuthToken may be used for (CTAP 2.1 §6.5.5.7 "Operations to Obtain a
/// pinUvAuthToken", permissions table): sent as the `permissions` bit field of
/// getPinUvAuthTokenUsingPinWithPermissions and getPinUvAuthTokenUsingUvWithPermissions.
public struct PINUVAuthTokenPermissions: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The bit field as sent.
    public var rawValue: UInt8
    /// Creates permissions from their bit field.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// mc (0x01): authenticatorMakeCredential; bound to the permissions RP ID.
    public static let makeCredential = PINUVAuthTokenPermissions(rawValue: 0x01)
    /// ga (0x02): authenticatorGetAssertion; bound to the permissions RP ID.
    public static let getAssertion = PINUVAuthTokenPermissions(rawValue: 0x02)
    /// cm (0x04): authenticatorCredentialManagement; optionally bound to an RP ID.
    public static let credentialManagement = PINUVAuthTokenPermissions(rawValue: 0x04)
    /// be (0x08): authenticatorBioEnrollment.
    public static let bioEnrollment = PINUVAuthTokenPermissions(rawValue: 0x08)
    /// lbw (0x10): writing with authenticatorLargeBlobs.
    public static let largeBlobWrite = PINUVAuthTokenPermissions(rawValue: 0x10)
    /// acfg (0x20): authenticatorConfig.
    public static let authenticatorConfiguration = PINUVAuthTokenPermissions(rawValue: 0x20)
    /// pcmr (0x40, CTAP 2.2): read-only credential management that outlives the token's
    /// usual lifetime.
    public static let persistentCredentialManagementReadOnly = PINUVAuthTokenPermissions(rawValue: 0x40)

    /// The permissions a token from the legacy getPinToken (0x05) carries (CTAP 2.1 §6.5.5.7.1).
    public static let legacyDefault: PINUVAuthTokenPermissions = [.makeCredential, .getAssertion]

    /// The permissions whose use is checked against the permissions RP ID.
    static let rpBound: PINUVAuthTokenPermissions = [.makeCredential, .getAssertion, .credentialManagement]

    public var description: String {
        let names: [(PINUVAuthTokenPermissions, String)] = [
            (.makeCredential, "mc"), (.getAssertion, "ga"), (.credentialManagement, "cm"),
            (.bioEnrollment, "be"), (.largeBlobWrite, "lbw"), (.authenticatorConfiguration, "acfg"),
            (.persistentCredentialManagementReadOnly, "pcmr"),
        ]
        var parts = names.filter { contains($0.0) }.map(\.1)
        let unknown = rawValue & ~names.reduce(0) { $0 | $1.0.rawValue }
        if unknown != 0 { parts.append("0x" + String(unknown, radix: 16)) }
        return "[" + parts.joined(separator: ", ") + "]"
    }
}
