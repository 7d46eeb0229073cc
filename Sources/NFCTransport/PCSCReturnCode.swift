import CPCSCLite
import Transport

/// A pcsc-lite return code (`SCARD_S_SUCCESS`, `SCARD_E_*`, `SCARD_W_*`, `SCARD_F_*`; PC/SC
/// Workgroup specification part 5). A code set that grows, so a struct with named values.
///
/// Travels as the `underlying` error of a ``TransportError``.
public struct PCSCReturnCode: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
    /// The `LONG` value pcsc-lite returns.
    public var rawValue: Int64
    /// Creates a code from its value.
    public init(rawValue: Int64) { self.rawValue = rawValue }

    /// `SCARD_S_SUCCESS`.
    public static let success = PCSCReturnCode(rawValue: 0)
    /// `SCARD_F_INTERNAL_ERROR`.
    public static let internalError = PCSCReturnCode(rawValue: 0x8010_0001)
    /// `SCARD_E_CANCELLED`: an `SCardCancel` ended the wait.
    public static let cancelled = PCSCReturnCode(rawValue: 0x8010_0002)
    /// `SCARD_E_INVALID_HANDLE`.
    public static let invalidHandle = PCSCReturnCode(rawValue: 0x8010_0003)
    /// `SCARD_E_INVALID_PARAMETER`.
    public static let invalidParameter = PCSCReturnCode(rawValue: 0x8010_0004)
    /// `SCARD_E_NO_MEMORY`.
    public static let noMemory = PCSCReturnCode(rawValue: 0x8010_0006)
    /// `SCARD_E_INSUFFICIENT_BUFFER`.
    public static let insufficientBuffer = PCSCReturnCode(rawValue: 0x8010_0008)
    /// `SCARD_E_UNKNOWN_READER`: no reader by that name.
    public static let unknownReader = PCSCReturnCode(rawValue: 0x8010_0009)
    /// `SCARD_E_TIMEOUT`: `SCardGetStatusChange`'s timeout passed without a change.
    public static let timeout = PCSCReturnCode(rawValue: 0x8010_000A)
    /// `SCARD_E_SHARING_VIOLATION`: another process holds the card exclusively.
    public static let sharingViolation = PCSCReturnCode(rawValue: 0x8010_000B)
    /// `SCARD_E_NO_SMARTCARD`: no card in the reader.
    public static let noSmartcard = PCSCReturnCode(rawValue: 0x8010_000C)
    /// `SCARD_E_PROTO_MISMATCH`.
    public static let protocolMismatch = PCSCReturnCode(rawValue: 0x8010_000F)
    /// `SCARD_E_NOT_READY`.
    public static let notReady = PCSCReturnCode(rawValue: 0x8010_0010)
    /// `SCARD_E_SYSTEM_CANCELLED`.
    public static let systemCancelled = PCSCReturnCode(rawValue: 0x8010_0012)
    /// `SCARD_F_COMM_ERROR`: talking to pcscd failed.
    public static let communicationError = PCSCReturnCode(rawValue: 0x8010_0013)
    /// `SCARD_F_UNKNOWN_ERROR`.
    public static let unknownError = PCSCReturnCode(rawValue: 0x8010_0014)
    /// `SCARD_E_NOT_TRANSACTED`: the reader could not exchange the APDU with the card.
    public static let notTransacted = PCSCReturnCode(rawValue: 0x8010_0016)
    /// `SCARD_E_READER_UNAVAILABLE`: the reader went away.
    public static let readerUnavailable = PCSCReturnCode(rawValue: 0x8010_0017)
    /// `SCARD_E_NO_SERVICE`: pcscd is not running.
    public static let noService = PCSCReturnCode(rawValue: 0x8010_001D)
    /// `SCARD_E_SERVICE_STOPPED`: pcscd stopped.
    public static let serviceStopped = PCSCReturnCode(rawValue: 0x8010_001E)
    /// `SCARD_E_NO_READERS_AVAILABLE`.
    public static let noReadersAvailable = PCSCReturnCode(rawValue: 0x8010_002E)
    /// `SCARD_W_UNRESPONSIVE_CARD`.
    public static let unresponsiveCard = PCSCReturnCode(rawValue: 0x8010_0066)
    /// `SCARD_W_UNPOWERED_CARD`.
    public static let unpoweredCard = PCSCReturnCode(rawValue: 0x8010_0067)
    /// `SCARD_W_RESET_CARD`: someone reset the card.
    public static let resetCard = PCSCReturnCode(rawValue: 0x8010_0068)
    /// `SCARD_W_REMOVED_CARD`: the card was removed.
    public static let removedCard = PCSCReturnCode(rawValue: 0x8010_0069)

    /// Builds the code from what a pcsc-lite function returned.
    init(_ value: LONG) {
        // LONG is 64-bit on Linux and the codes are positive there; on 32-bit LONG platforms
        // they arrive negative, so keep only the low 32 bits.
        self.rawValue = Int64(value) & 0xFFFF_FFFF
    }

    /// pcsc-lite's own text for the code.
    public var description: String {
        let text = pcsc_stringify_error(LONG(truncatingIfNeeded: rawValue)).map { String(cString: $0) }
        let hex = String(rawValue, radix: 16, uppercase: true)
        return "\(text ?? "PC/SC error") (0x\(hex))"
    }

    /// The transport error for this code returned by `function` (the one mapping every wrapper uses).
    func transportError(_ function: String) -> TransportError {
        let (code, message): (TransportError.Code, String) =
            switch self {
            case .noService, .serviceStopped:
                (.noDevice, "The PC/SC service (pcscd) is not running.")
            case .noReadersAvailable:
                (.noDevice, "No smart card reader is connected.")
            case .unknownReader, .readerUnavailable:
                (.noDevice, "The smart card reader went away.")
            case .noSmartcard, .removedCard:
                (.noDevice, "The card was removed from the reader.")
            case .resetCard:
                (.noDevice, "Another program reset the card.")
            case .unresponsiveCard, .unpoweredCard:
                (.deviceError, "The card does not respond.")
            case .sharingViolation:
                (.busy, "Another program is using the card.")
            case .cancelled:
                (.cancelled, "The operation was cancelled.")
            case .timeout:
                (.timeout, "The reader did not report a change in time.")
            case .notTransacted, .communicationError:
                (.deviceError, "The reader could not exchange data with the card.")
            default:
                (.system, "The PC/SC call \(function) failed.")
            }
        return TransportError(code, message, underlying: PCSCCallError(function: function, returnCode: self))
    }
}

/// Which pcsc-lite function failed and how: the `underlying` of a PC/SC ``TransportError``.
public struct PCSCCallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The C function, e.g. `SCardTransmit`.
    public var function: String
    /// What it returned.
    public var returnCode: PCSCReturnCode
    public var description: String { "\(function): \(returnCode)" }
}
