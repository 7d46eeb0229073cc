/// One HID report of the CTAPHID protocol, parsed (CTAP 2.1 §11.2.4).
///
/// An initialization packet carries the channel, the command with its high bit set, a two-byte
/// big-endian payload length and the first payload bytes; a continuation packet carries the
/// channel, a sequence number 0...127 and further payload bytes.
public struct CTAPHIDPacket: Hashable, Sendable {
    /// The two packet kinds.
    public enum Kind: Hashable, Sendable {
        /// The first packet of a message: its command and total payload length.
        case initialization(command: CTAPHIDCommand, length: Int)
        /// A following packet with its sequence number.
        case continuation(sequence: UInt8)
    }

    /// The channel ID.
    public var channel: UInt32
    /// What kind of packet this is.
    public var kind: Kind
    /// The payload bytes the packet carries, padding included (the reassembler trims it).
    public var data: ArraySlice<UInt8>

    /// Size of an initialization packet's header: channel, command, length.
    public static let initializationHeaderSize = 7
    /// Size of a continuation packet's header: channel, sequence.
    public static let continuationHeaderSize = 5
    /// The largest sequence number.
    public static let maxSequence: UInt8 = 0x7F

    /// Creates a packet from its fields.
    public init(channel: UInt32, kind: Kind, data: ArraySlice<UInt8>) {
        self.channel = channel
        self.kind = kind
        self.data = data
    }

    /// Parses one report as received from a device or host (no HID report-ID byte).
    ///
    /// Throws ``CTAPHIDError/Code/truncatedReport`` when the report is shorter than the header
    /// its kind needs.
    public init(report: [UInt8]) throws(CTAPHIDError) {
        guard report.count >= Self.continuationHeaderSize else {
            throw CTAPHIDError(.truncatedReport, "A CTAPHID report of \(report.count) bytes is too short.")
        }
        let channel = CTAPHIDPacket.channel(of: report) ?? 0
        let byte4 = report[4]
        if byte4 & 0x80 != 0 {
            guard report.count >= Self.initializationHeaderSize else {
                throw CTAPHIDError(
                    .truncatedReport, "A CTAPHID initialization report of \(report.count) bytes is too short."
                )
            }
            let length = Int(report[5]) << 8 | Int(report[6])
            self.init(
                channel: channel,
                kind: .initialization(command: CTAPHIDCommand(rawValue: byte4), length: length),
                data: report[Self.initializationHeaderSize...])
        } else {
            self.init(
                channel: channel, kind: .continuation(sequence: byte4),
                data: report[Self.continuationHeaderSize...])
        }
    }

    /// The channel ID of a report, or nil when it is shorter than four bytes.
    public static func channel(of report: [UInt8]) -> UInt32? {
        guard report.count >= 4 else { return nil }
        return UInt32(report[0]) << 24 | UInt32(report[1]) << 16 | UInt32(report[2]) << 8 | UInt32(report[3])
    }
}
