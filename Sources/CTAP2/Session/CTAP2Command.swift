/// A CTAP2 command byte (CTAP 2.1 §6 "Authenticator API", command table in §6).
public struct CTAP2Command: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The command byte.
    public var rawValue: UInt8
    /// Creates a command from its byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// authenticatorMakeCredential (§6.1).
    public static let makeCredential = CTAP2Command(rawValue: 0x01)
    /// authenticatorGetAssertion (§6.2).
    public static let getAssertion = CTAP2Command(rawValue: 0x02)
    /// authenticatorGetInfo (§6.4).
    public static let getInfo = CTAP2Command(rawValue: 0x04)
    /// authenticatorClientPIN (§6.5).
    public static let clientPIN = CTAP2Command(rawValue: 0x06)
    /// authenticatorReset (§6.6).
    public static let reset = CTAP2Command(rawValue: 0x07)
    /// authenticatorGetNextAssertion (§6.3).
    public static let getNextAssertion = CTAP2Command(rawValue: 0x08)
    /// authenticatorBioEnrollment (§6.7).
    public static let bioEnrollment = CTAP2Command(rawValue: 0x09)
    /// authenticatorCredentialManagement (§6.8).
    public static let credentialManagement = CTAP2Command(rawValue: 0x0A)
    /// authenticatorSelection (§6.9).
    public static let selection = CTAP2Command(rawValue: 0x0B)
    /// authenticatorLargeBlobs (§6.10).
    public static let largeBlobs = CTAP2Command(rawValue: 0x0C)
    /// authenticatorConfig (§6.11).
    public static let config = CTAP2Command(rawValue: 0x0D)
    /// The pre-standard (FIDO_2_1_PRE) authenticatorBioEnrollment.
    public static let bioEnrollmentPreview = CTAP2Command(rawValue: 0x40)
    /// The pre-standard (FIDO_2_1_PRE) authenticatorCredentialManagement.
    public static let credentialManagementPreview = CTAP2Command(rawValue: 0x41)

    public var description: String {
        switch self {
        case .makeCredential: "authenticatorMakeCredential"
        case .getAssertion: "authenticatorGetAssertion"
        case .getInfo: "authenticatorGetInfo"
        case .clientPIN: "authenticatorClientPIN"
        case .reset: "authenticatorReset"
        case .getNextAssertion: "authenticatorGetNextAssertion"
        case .bioEnrollment: "authenticatorBioEnrollment"
        case .credentialManagement: "authenticatorCredentialManagement"
        case .selection: "authenticatorSelection"
        case .largeBlobs: "authenticatorLargeBlobs"
        case .config: "authenticatorConfig"
        case .bioEnrollmentPreview: "authenticatorBioEnrollment (preview)"
        case .credentialManagementPreview: "authenticatorCredentialManagement (preview)"
        default: "command(0x\(String(rawValue, radix: 16)))"
        }
    }
}
