/// An ISO 7816-4 status word ending a CTAP1/U2F response (FIDO U2F Raw Message Formats §3.3).
///
/// A raw-representable set rather than a closed enum: keys answer words this library does not name.
public struct U2FStatusWord: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
    /// SW1 ‖ SW2 as one number.
    public var rawValue: UInt16
    /// A status word by its value.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// The status word of the last two bytes of a response.
    public init(sw1: UInt8, sw2: UInt8) { rawValue = UInt16(sw1) << 8 | UInt16(sw2) }

    /// SW_NO_ERROR: the command completed.
    public static let noError = U2FStatusWord(rawValue: 0x9000)
    /// SW_CONDITIONS_NOT_SATISFIED: user presence is needed (or, for check-only, the key handle is known).
    public static let conditionsNotSatisfied = U2FStatusWord(rawValue: 0x6985)
    /// SW_WRONG_DATA: the key handle is not this key's for this application, or the data is bad.
    public static let wrongData = U2FStatusWord(rawValue: 0x6A80)
    /// SW_WRONG_LENGTH: the request's length is wrong.
    public static let wrongLength = U2FStatusWord(rawValue: 0x6700)
    /// SW_CLA_NOT_SUPPORTED: the class byte is not supported.
    public static let classNotSupported = U2FStatusWord(rawValue: 0x6E00)
    /// SW_INS_NOT_SUPPORTED: the instruction is not supported.
    public static let instructionNotSupported = U2FStatusWord(rawValue: 0x6D00)

    public var description: String {
        let digits = String(rawValue, radix: 16, uppercase: true)
        let hex = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        switch self {
        case .noError: return "\(hex) (no error)"
        case .conditionsNotSatisfied: return "\(hex) (conditions not satisfied)"
        case .wrongData: return "\(hex) (wrong data)"
        case .wrongLength: return "\(hex) (wrong length)"
        case .classNotSupported: return "\(hex) (class not supported)"
        case .instructionNotSupported: return "\(hex) (instruction not supported)"
        default: return hex
        }
    }
}

extension CTAP2Error.Code {
    /// A CTAP1/U2F key answered with a status word that has no code of its own; the
    /// ``U2FStatusWord`` is the underlying error.
    public static let u2fStatus = CTAP2Error.Code(rawValue: "u2f-status")
}

extension CTAP2Error {
    /// The error for a U2F status word other than success, in one place: an unknown key handle
    /// is ``Code/noCredentials``, an unknown instruction ``Code/invalidCommand``, a touch that never
    /// came ``Code/userActionTimeout``, anything else ``Code/u2fStatus``.
    public static func u2f(
        _ status: U2FStatusWord, _ instruction: U2FInstruction, file: String = #fileID, line: Int = #line
    ) -> CTAP2Error {
        let (code, message): (Code, String)
        switch status {
        case .wrongData where instruction == .authenticate:
            (code, message) = (.noCredentials, "The security key does not hold this credential for this site.")
        case .conditionsNotSatisfied:
            (code, message) = (.userActionTimeout, "The security key was not touched in time.")
        case .instructionNotSupported, .classNotSupported:
            (code, message) = (.invalidCommand, "The security key does not know the U2F \(instruction) command.")
        default:
            (code, message) = (.u2fStatus, "The security key refused the U2F \(instruction) request (status \(status)).")
        }
        return CTAP2Error(code, message, underlying: status, file: file, line: line)
    }
}
