/// The error byte a device sends in a CTAPHID_ERROR message (CTAP 2.1 §11.2.9.1.6).
public struct CTAPHIDErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The error value.
    public var rawValue: UInt8
    /// Wraps an error value.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// ERR_INVALID_CMD: the command in the request is invalid.
    public static let invalidCommand = CTAPHIDErrorCode(rawValue: 0x01)
    /// ERR_INVALID_PAR: a parameter in the request is invalid.
    public static let invalidParameter = CTAPHIDErrorCode(rawValue: 0x02)
    /// ERR_INVALID_LEN: the length field of the request is invalid.
    public static let invalidLength = CTAPHIDErrorCode(rawValue: 0x03)
    /// ERR_INVALID_SEQ: a continuation packet arrived out of sequence.
    public static let invalidSequence = CTAPHIDErrorCode(rawValue: 0x04)
    /// ERR_MSG_TIMEOUT: the message was not completed in time.
    public static let messageTimeout = CTAPHIDErrorCode(rawValue: 0x05)
    /// ERR_CHANNEL_BUSY: the device is busy with another channel.
    public static let channelBusy = CTAPHIDErrorCode(rawValue: 0x06)
    /// ERR_LOCK_REQUIRED: the command requires a channel lock.
    public static let lockRequired = CTAPHIDErrorCode(rawValue: 0x0A)
    /// ERR_INVALID_CHANNEL: the channel ID is not valid.
    public static let invalidChannel = CTAPHIDErrorCode(rawValue: 0x0B)
    /// ERR_OTHER: an unspecified error.
    public static let other = CTAPHIDErrorCode(rawValue: 0x7F)

    public var description: String {
        switch self {
        case .invalidCommand: "invalid command"
        case .invalidParameter: "invalid parameter"
        case .invalidLength: "invalid length"
        case .invalidSequence: "invalid sequence"
        case .messageTimeout: "message timeout"
        case .channelBusy: "channel busy"
        case .lockRequired: "lock required"
        case .invalidChannel: "invalid channel"
        case .other: "unspecified error"
        default: "error 0x\(String(rawValue, radix: 16))"
        }
    }
}
