/// A status word of a metadata status report (FIDO MDS3 §3.1.4 "AuthenticatorStatus"). An open
/// set: values this module does not know are kept as they were sent.
public struct AuthenticatorStatus: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The status word as the metadata spells it.
    public var rawValue: String
    /// Creates a status from its word.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Not certified by FIDO.
    public static let notFIDOCertified = Self(rawValue: "NOT_FIDO_CERTIFIED")
    /// Passed functional certification (older, level-less form).
    public static let fidoCertified = Self(rawValue: "FIDO_CERTIFIED")
    /// The user verification can be bypassed.
    public static let userVerificationBypass = Self(rawValue: "USER_VERIFICATION_BYPASS")
    /// An attestation key of this model is compromised.
    public static let attestationKeyCompromise = Self(rawValue: "ATTESTATION_KEY_COMPROMISE")
    /// User keys can be extracted remotely.
    public static let userKeyRemoteCompromise = Self(rawValue: "USER_KEY_REMOTE_COMPROMISE")
    /// User keys can be extracted with physical access.
    public static let userKeyPhysicalCompromise = Self(rawValue: "USER_KEY_PHYSICAL_COMPROMISE")
    /// A firmware update is available.
    public static let updateAvailable = Self(rawValue: "UPDATE_AVAILABLE")
    /// FIDO revoked the certification.
    public static let revoked = Self(rawValue: "REVOKED")
    /// The vendor's self-assertion was submitted.
    public static let selfAssertionSubmitted = Self(rawValue: "SELF_ASSERTION_SUBMITTED")
    /// Certified at level 1.
    public static let fidoCertifiedL1 = Self(rawValue: "FIDO_CERTIFIED_L1")
    /// Certified at level 1+.
    public static let fidoCertifiedL1Plus = Self(rawValue: "FIDO_CERTIFIED_L1plus")
    /// Certified at level 2.
    public static let fidoCertifiedL2 = Self(rawValue: "FIDO_CERTIFIED_L2")
    /// Certified at level 2+.
    public static let fidoCertifiedL2Plus = Self(rawValue: "FIDO_CERTIFIED_L2plus")
    /// Certified at level 3.
    public static let fidoCertifiedL3 = Self(rawValue: "FIDO_CERTIFIED_L3")
    /// Certified at level 3+.
    public static let fidoCertifiedL3Plus = Self(rawValue: "FIDO_CERTIFIED_L3plus")

    /// The statuses a relying party refuses by default: the model's certification is revoked,
    /// or its keys or user verification are known to be broken.
    public static let refusedByDefault: Set<AuthenticatorStatus> = [
        .revoked, .attestationKeyCompromise, .userKeyRemoteCompromise, .userKeyPhysicalCompromise,
        .userVerificationBypass,
    ]

    /// Whether this word is a certification result (FIDO_CERTIFIED, _L1 ... _L3plus, NOT_FIDO_CERTIFIED).
    public var isCertification: Bool {
        rawValue.hasPrefix("FIDO_CERTIFIED") || self == .notFIDOCertified
    }

    public var description: String { rawValue }

    /// Decodes the status word as a JSON string.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes the status word as a JSON string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
