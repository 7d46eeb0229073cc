/// A CTAP2 command byte, the first byte of every request (CTAP 2.1 §6 "Authenticator API").
public struct CTAPCommand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// authenticatorMakeCredential (§6.1).
    public static let makeCredential = CTAPCommand(rawValue: 0x01)
    /// authenticatorGetAssertion (§6.2).
    public static let getAssertion = CTAPCommand(rawValue: 0x02)
    /// authenticatorGetInfo (§6.4).
    public static let getInfo = CTAPCommand(rawValue: 0x04)
    /// authenticatorClientPIN (§6.5).
    public static let clientPIN = CTAPCommand(rawValue: 0x06)
    /// authenticatorReset (§6.6).
    public static let reset = CTAPCommand(rawValue: 0x07)
    /// authenticatorGetNextAssertion (§6.3).
    public static let getNextAssertion = CTAPCommand(rawValue: 0x08)
    /// authenticatorCredentialManagement (§6.8).
    public static let credentialManagement = CTAPCommand(rawValue: 0x0A)
    /// authenticatorSelection (§6.9).
    public static let selection = CTAPCommand(rawValue: 0x0B)
    /// authenticatorConfig (§6.11).
    public static let config = CTAPCommand(rawValue: 0x0D)
    /// authenticatorCredentialManagement as FIDO_2_1_PRE keys number it (vendor command 0x41).
    public static let credentialManagementPreview = CTAPCommand(rawValue: 0x41)

    public var description: String {
        switch self {
        case .makeCredential: "makeCredential"
        case .getAssertion: "getAssertion"
        case .getInfo: "getInfo"
        case .clientPIN: "clientPIN"
        case .reset: "reset"
        case .getNextAssertion: "getNextAssertion"
        case .selection: "selection"
        case .credentialManagement: "credentialManagement"
        case .config: "config"
        case .credentialManagementPreview: "credentialManagementPreview"
        default: "command(0x\(String(rawValue, radix: 16)))"
        }
    }
}
