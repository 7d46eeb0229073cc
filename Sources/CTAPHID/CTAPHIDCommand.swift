/// A CTAPHID command byte, without the initialization-packet bit (CTAP 2.1 §11.2.9).
public struct CTAPHIDCommand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The command value (0x00...0x7F).
    public var rawValue: UInt8
    /// Wraps a command value; the high bit is masked off.
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x7F }

    /// CTAPHID_PING: echo the payload (§11.2.9.1.4).
    public static let ping = CTAPHIDCommand(rawValue: 0x01)
    /// CTAPHID_MSG: a CTAP1/U2F APDU (§11.2.9.1.1).
    public static let msg = CTAPHIDCommand(rawValue: 0x03)
    /// CTAPHID_LOCK: reserve the device for one channel (§11.2.9.2.2).
    public static let lock = CTAPHIDCommand(rawValue: 0x04)
    /// CTAPHID_INIT: allocate or resynchronise a channel (§11.2.9.1.3).
    public static let initialize = CTAPHIDCommand(rawValue: 0x06)
    /// CTAPHID_WINK: identify the device to the user (§11.2.9.2.1).
    public static let wink = CTAPHIDCommand(rawValue: 0x08)
    /// CTAPHID_CBOR: a CTAP2 command (§11.2.9.1.2).
    public static let cbor = CTAPHIDCommand(rawValue: 0x10)
    /// CTAPHID_CANCEL: abort the channel's outstanding request (§11.2.9.1.5).
    public static let cancel = CTAPHIDCommand(rawValue: 0x11)
    /// CTAPHID_KEEPALIVE: the device is still working (§11.2.9.1.7).
    public static let keepalive = CTAPHIDCommand(rawValue: 0x3B)
    /// CTAPHID_ERROR: the device reports a transport error (§11.2.9.1.6).
    public static let error = CTAPHIDCommand(rawValue: 0x3F)

    public var description: String {
        switch self {
        case .ping: "PING"
        case .msg: "MSG"
        case .lock: "LOCK"
        case .initialize: "INIT"
        case .wink: "WINK"
        case .cbor: "CBOR"
        case .cancel: "CANCEL"
        case .keepalive: "KEEPALIVE"
        case .error: "ERROR"
        default: "command(0x\(String(rawValue, radix: 16)))"
        }
    }
}

/// The status byte of a CTAPHID_KEEPALIVE message (CTAP 2.1 §11.2.9.1.7).
public struct CTAPHIDKeepaliveStatus: RawRepresentable, Hashable, Sendable {
    /// The status value.
    public var rawValue: UInt8
    /// Wraps a status value.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// STATUS_PROCESSING: the authenticator is still processing the request.
    public static let processing = CTAPHIDKeepaliveStatus(rawValue: 1)
    /// STATUS_UPNEEDED: the authenticator is waiting for user presence.
    public static let userPresenceNeeded = CTAPHIDKeepaliveStatus(rawValue: 2)
}

/// The capability flags of a CTAPHID_INIT response (CTAP 2.1 §11.2.9.1.3).
public struct CTAPHIDCapabilities: OptionSet, Hashable, Sendable {
    /// The flag bits.
    public var rawValue: UInt8
    /// Wraps flag bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// CAPABILITY_WINK: the device implements CTAPHID_WINK.
    public static let wink = CTAPHIDCapabilities(rawValue: 0x01)
    /// CAPABILITY_CBOR: the device implements CTAPHID_CBOR.
    public static let cbor = CTAPHIDCapabilities(rawValue: 0x04)
    /// CAPABILITY_NMSG: the device does not implement CTAPHID_MSG.
    public static let noMSG = CTAPHIDCapabilities(rawValue: 0x08)
}
