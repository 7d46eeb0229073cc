/// One CTAPHID message: a command and its payload on a channel (CTAP 2.1 §11.2.4).
public struct CTAPHIDMessage: Hashable, Sendable {
    /// The channel ID.
    public var channel: UInt32
    /// The command.
    public var command: CTAPHIDCommand
    /// The payload.
    public var payload: [UInt8]

    /// The broadcast channel, used only for CTAPHID_INIT.
    public static let broadcastChannel: UInt32 = 0xFFFF_FFFF
    /// The report size of full-speed USB FIDO devices, used when a device does not say otherwise.
    public static let defaultReportSize = 64
    /// The report sizes this implementation accepts.
    public static let supportedReportSizes = 8...4096

    /// Creates a message.
    public init(channel: UInt32, command: CTAPHIDCommand, payload: [UInt8]) {
        self.channel = channel
        self.command = command
        self.payload = payload
    }

    /// The largest payload one message can carry in reports of `reportSize` bytes:
    /// one initialization packet and 128 continuation packets, capped by the 16-bit length field.
    /// For 64-byte reports this is 7609.
    public static func maxPayloadSize(reportSize: Int) -> Int {
        guard supportedReportSizes.contains(reportSize) else { return 0 }
        let initial = reportSize - CTAPHIDPacket.initializationHeaderSize
        let continuation = reportSize - CTAPHIDPacket.continuationHeaderSize
        return min(initial + (Int(CTAPHIDPacket.maxSequence) + 1) * continuation, Int(UInt16.max))
    }

    /// Splits the message into reports of exactly `reportSize` bytes, zero-padded.
    ///
    /// Throws ``CTAPHIDError/Code/messageTooLarge`` when the payload does not fit and
    /// ``CTAPHIDError/Code/invalidReportSize`` for an unsupported report size.
    public func reports(reportSize: Int) throws(CTAPHIDError) -> [[UInt8]] {
        guard Self.supportedReportSizes.contains(reportSize) else {
            throw CTAPHIDError(
                .invalidReportSize, "A HID report size of \(reportSize) bytes is not supported.")
        }
        let limit = Self.maxPayloadSize(reportSize: reportSize)
        guard payload.count <= limit else {
            throw CTAPHIDError(
                .messageTooLarge,
                "A message of \(payload.count) bytes exceeds the CTAPHID limit of \(limit) bytes.")
        }
        let channelBytes: [UInt8] = [
            UInt8(truncatingIfNeeded: channel >> 24), UInt8(truncatingIfNeeded: channel >> 16),
            UInt8(truncatingIfNeeded: channel >> 8), UInt8(truncatingIfNeeded: channel),
        ]
        var reports: [[UInt8]] = []
        var first = channelBytes
        first.append(command.rawValue | 0x80)
        first.append(UInt8(truncatingIfNeeded: payload.count >> 8))
        first.append(UInt8(truncatingIfNeeded: payload.count))
        var offset = min(payload.count, reportSize - CTAPHIDPacket.initializationHeaderSize)
        first.append(contentsOf: payload[0..<offset])
        first.append(contentsOf: repeatElement(0, count: reportSize - first.count))
        reports.append(first)
        var sequence: UInt8 = 0
        while offset < payload.count {
            let end = min(payload.count, offset + reportSize - CTAPHIDPacket.continuationHeaderSize)
            var report = channelBytes
            report.append(sequence)
            report.append(contentsOf: payload[offset..<end])
            report.append(contentsOf: repeatElement(0, count: reportSize - report.count))
            reports.append(report)
            offset = end
            sequence &+= 1
        }
        return reports
    }
}
