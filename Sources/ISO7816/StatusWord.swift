/// The two status bytes SW1-SW2 that end every response APDU (ISO/IEC 7816-4 §5.6).
///
/// A code set that grows with every card specification, so a struct with named values rather
/// than a closed enum.
public struct StatusWord: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// SW1 in the high byte, SW2 in the low byte.
    public var rawValue: UInt16
    /// Creates a status word from its 16-bit value.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Creates a status word from its two bytes.
    public init(sw1: UInt8, sw2: UInt8) { self.rawValue = UInt16(sw1) << 8 | UInt16(sw2) }

    /// The first status byte.
    public var sw1: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 8) }
    /// The second status byte.
    public var sw2: UInt8 { UInt8(truncatingIfNeeded: rawValue) }
    /// The status word as it travels: SW1 then SW2.
    public var bytes: [UInt8] { [sw1, sw2] }

    /// Normal processing, no further qualification (9000).
    public static let success = StatusWord(rawValue: 0x9000)
    /// CTAP 2.1 §11.3.3: the authenticator is still working; poll with NFCCTAP_GETRESPONSE (9100).
    public static let ctapStillProcessing = StatusWord(rawValue: 0x9100)
    /// Warning: state of non-volatile memory unchanged (6200).
    public static let warningNoInformation = StatusWord(rawValue: 0x6200)
    /// Warning: state of non-volatile memory changed (6300).
    public static let warningMemoryChanged = StatusWord(rawValue: 0x6300)
    /// Execution error: state of non-volatile memory unchanged (6400).
    public static let executionError = StatusWord(rawValue: 0x6400)
    /// Execution error: memory failure (6581).
    public static let memoryFailure = StatusWord(rawValue: 0x6581)
    /// Wrong length: Lc or Le is not what the card accepts (6700).
    public static let wrongLength = StatusWord(rawValue: 0x6700)
    /// Logical channel not supported (6881).
    public static let logicalChannelNotSupported = StatusWord(rawValue: 0x6881)
    /// Secure messaging not supported (6882).
    public static let secureMessagingNotSupported = StatusWord(rawValue: 0x6882)
    /// Last command of the chain expected (6883).
    public static let lastCommandOfChainExpected = StatusWord(rawValue: 0x6883)
    /// Command chaining not supported (6884).
    public static let commandChainingNotSupported = StatusWord(rawValue: 0x6884)
    /// Command not allowed, no further information (6900).
    public static let commandNotAllowed = StatusWord(rawValue: 0x6900)
    /// Security status not satisfied (6982).
    public static let securityStatusNotSatisfied = StatusWord(rawValue: 0x6982)
    /// Authentication method blocked (6983).
    public static let authenticationMethodBlocked = StatusWord(rawValue: 0x6983)
    /// Conditions of use not satisfied; for U2F, user presence is required (6985).
    public static let conditionsNotSatisfied = StatusWord(rawValue: 0x6985)
    /// Wrong parameters in the data field (6A80).
    public static let incorrectData = StatusWord(rawValue: 0x6A80)
    /// Function not supported (6A81).
    public static let functionNotSupported = StatusWord(rawValue: 0x6A81)
    /// File or application not found (6A82).
    public static let fileNotFound = StatusWord(rawValue: 0x6A82)
    /// Not enough memory space in the file (6A84).
    public static let notEnoughMemory = StatusWord(rawValue: 0x6A84)
    /// Incorrect parameters P1-P2 (6A86).
    public static let incorrectParameters = StatusWord(rawValue: 0x6A86)
    /// Referenced data not found (6A88).
    public static let referencedDataNotFound = StatusWord(rawValue: 0x6A88)
    /// Wrong parameters P1-P2 (6B00).
    public static let wrongParameters = StatusWord(rawValue: 0x6B00)
    /// Instruction code not supported or invalid (6D00).
    public static let instructionNotSupported = StatusWord(rawValue: 0x6D00)
    /// Class not supported (6E00).
    public static let classNotSupported = StatusWord(rawValue: 0x6E00)
    /// No precise diagnosis (6F00).
    public static let noPreciseDiagnosis = StatusWord(rawValue: 0x6F00)

    /// SW1 `61`: SW2 more response bytes are waiting for GET RESPONSE (00 meaning 256 or more).
    public var bytesRemaining: Int? {
        sw1 == 0x61 ? (sw2 == 0 ? 256 : Int(sw2)) : nil
    }

    /// SW1 `6C`: wrong Le; SW2 is the exact number of bytes available (00 meaning 256).
    public var correctLe: Int? {
        sw1 == 0x6C ? (sw2 == 0 ? 256 : Int(sw2)) : nil
    }

    /// True for `9000` and for `61xx` (normal processing).
    public var isSuccess: Bool { self == .success || sw1 == 0x61 }

    /// One human sentence describing the status.
    public var message: String {
        switch self {
        case .success: return "The card completed the command."
        case .ctapStillProcessing: return "The authenticator is still processing the request."
        case .warningNoInformation: return "The card warned without further information."
        case .warningMemoryChanged: return "The card warned that its memory changed."
        case .executionError: return "The card failed to execute the command."
        case .memoryFailure: return "The card reported a memory failure."
        case .wrongLength: return "The card rejected the command's length."
        case .logicalChannelNotSupported: return "The card does not support logical channels."
        case .secureMessagingNotSupported: return "The card does not support secure messaging."
        case .lastCommandOfChainExpected: return "The card expected the last command of a chain."
        case .commandChainingNotSupported: return "The card does not support command chaining."
        case .commandNotAllowed: return "The card does not allow this command."
        case .securityStatusNotSatisfied: return "The card's security status is not satisfied."
        case .authenticationMethodBlocked: return "The card's authentication method is blocked."
        case .conditionsNotSatisfied:
            return "The card's conditions of use are not satisfied (touch may be required)."
        case .incorrectData: return "The card rejected the command's data."
        case .functionNotSupported: return "The card does not support this function."
        case .fileNotFound: return "The card does not have the requested application or file."
        case .notEnoughMemory: return "The card does not have enough memory."
        case .incorrectParameters, .wrongParameters: return "The card rejected the command's parameters."
        case .referencedDataNotFound: return "The card did not find the referenced data."
        case .instructionNotSupported: return "The card does not support this instruction."
        case .classNotSupported: return "The card does not support this command class."
        case .noPreciseDiagnosis: return "The card failed without a precise diagnosis."
        default:
            if let n = bytesRemaining { return "The card has \(n) more response bytes." }
            if let n = correctLe { return "The card asks for the command again with Le \(n)." }
            switch sw1 {
            case 0x62, 0x63: return "The card returned a warning."
            case 0x64, 0x65, 0x66: return "The card reported an execution error."
            case 0x67, 0x68, 0x69, 0x6A, 0x6B, 0x6D, 0x6E, 0x6F: return "The card rejected the command."
            default: return "The card returned an unknown status."
            }
        }
    }

    public var description: String {
        let hex = String(rawValue, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
