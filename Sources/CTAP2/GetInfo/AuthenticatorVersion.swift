/// A protocol version an authenticator reports in getInfo (CTAP 2.2 §6.4 `versions`).
///
/// Versions this library does not know keep their string, so nothing a key reports is lost.
public struct AuthenticatorVersion: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible
{
    /// The version string as the key sends it.
    public var rawValue: String
    /// A version by its string.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `U2F_V2`: CTAP1/U2F.
    public static let u2fV2 = AuthenticatorVersion(rawValue: "U2F_V2")
    /// `FIDO_2_0`: CTAP 2.0.
    public static let fido2_0 = AuthenticatorVersion(rawValue: "FIDO_2_0")
    /// `FIDO_2_1_PRE`: the CTAP 2.1 review draft (preview credential management and bio enrollment).
    public static let fido2_1Pre = AuthenticatorVersion(rawValue: "FIDO_2_1_PRE")
    /// `FIDO_2_1`: CTAP 2.1.
    public static let fido2_1 = AuthenticatorVersion(rawValue: "FIDO_2_1")
    /// `FIDO_2_2`: CTAP 2.2.
    public static let fido2_2 = AuthenticatorVersion(rawValue: "FIDO_2_2")

    public static func < (lhs: AuthenticatorVersion, rhs: AuthenticatorVersion) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { rawValue }
}

extension AuthenticatorInfo {
    /// Whether the key speaks CTAP 2.1, final or preview (`FIDO_2_1` or `FIDO_2_1_PRE`): it then
    /// has authenticatorSelection, permissions on tokens and the 2.1 status codes.
    public var supportsCTAP21: Bool { versions.contains(.fido2_1) || versions.contains(.fido2_1Pre) }
    /// Whether the key lists `FIDO_2_2`.
    public var supportsCTAP22: Bool { versions.contains(.fido2_2) }
    /// Whether the key also speaks U2F (`U2F_V2`).
    public var supportsU2F: Bool { versions.contains(.u2fV2) }
}
