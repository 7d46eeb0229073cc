/// Reassembles the reports a device sends on one channel into messages, strictly
/// (CTAP 2.1 §11.2.4): sequence numbers must run 0, 1, 2... in order, no initialization packet may
/// interrupt a message, the declared length must fit the report size, and every report must be
/// exactly one report long. Reports for other channels are ignored.
public struct CTAPHIDMessageAssembler: Sendable {
    /// What one report did.
    public enum Step: Hashable, Sendable {
        /// The report belongs to another channel and was ignored.
        case ignored
        /// The report was accepted; the message is not complete yet.
        case needMore
        /// The report completed this message.
        case complete(CTAPHIDMessage)
    }

    private struct Partial: Sendable {
        var command: CTAPHIDCommand
        var length: Int
        var payload: [UInt8]
        var nextSequence: UInt8
    }

    /// The channel whose reports are assembled.
    public var channel: UInt32
    /// The report size every report must have.
    public let reportSize: Int
    private var partial: Partial?

    /// Creates an assembler for `channel` with reports of `reportSize` bytes.
    public init(channel: UInt32, reportSize: Int = CTAPHIDMessage.defaultReportSize) {
        self.channel = channel
        self.reportSize = reportSize
    }

    /// True while a message has started but not completed.
    public var isAssembling: Bool { partial != nil }

    /// Forgets any partial message.
    public mutating func reset() { partial = nil }

    /// Feeds one report. On error the partial message is dropped.
    public mutating func append(_ report: [UInt8]) throws(CTAPHIDError) -> Step {
        let step = report.withUnsafeBytes { bytes in
            Result { () throws(CTAPHIDError) -> Step in try append(bytes: bytes) }
        }
        return try step.get()
    }

    /// Feeds one report held in memory the caller owns (a pipe's receive buffer), so a report
    /// needs no array of its own; only the payload bytes are copied. On error the partial
    /// message is dropped.
    public mutating func append(bytes report: UnsafeRawBufferPointer) throws(CTAPHIDError) -> Step {
        guard report.count >= 4 else {
            partial = nil
            throw CTAPHIDError(.truncatedReport, "A CTAPHID report of \(report.count) bytes is too short.")
        }
        let reportChannel =
            UInt32(report[0]) << 24 | UInt32(report[1]) << 16 | UInt32(report[2]) << 8 | UInt32(report[3])
        guard reportChannel == channel else { return .ignored }
        do {
            return try accept(report)
        } catch {
            partial = nil
            throw error
        }
    }

    private mutating func accept(_ report: UnsafeRawBufferPointer) throws(CTAPHIDError) -> Step {
        guard report.count == reportSize else {
            throw CTAPHIDError(
                report.count < reportSize ? .truncatedReport : .malformedPacket,
                "A CTAPHID report of \(report.count) bytes does not match the report size of \(reportSize).")
        }
        // The header as `CTAPHIDPacket(report:)` reads it (CTAP 2.1 §11.2.4), without the slice.
        guard report.count >= CTAPHIDPacket.continuationHeaderSize else {
            throw CTAPHIDError(.truncatedReport, "A CTAPHID report of \(report.count) bytes is too short.")
        }
        let byte4 = report[4]
        if byte4 & 0x80 != 0 {
            guard report.count >= CTAPHIDPacket.initializationHeaderSize else {
                throw CTAPHIDError(
                    .truncatedReport, "A CTAPHID initialization report of \(report.count) bytes is too short."
                )
            }
            guard partial == nil else {
                throw CTAPHIDError(
                    .unexpectedInitialization,
                    "The security key started a new CTAPHID message before finishing the previous one.")
            }
            let length = Int(report[5]) << 8 | Int(report[6])
            let limit = CTAPHIDMessage.maxPayloadSize(reportSize: reportSize)
            guard length <= limit else {
                throw CTAPHIDError(
                    .messageTooLarge,
                    "The security key announced a \(length)-byte message, over the limit of \(limit) bytes.")
            }
            let data = UnsafeRawBufferPointer(rebasing: report[CTAPHIDPacket.initializationHeaderSize...])
            // The whole message's room at once (length is bounded above), so continuation
            // reports append without growing the buffer again.
            var payload: [UInt8] = []
            payload.reserveCapacity(length)
            payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: data[..<min(length, data.count)]))
            let started = Partial(
                command: CTAPHIDCommand(rawValue: byte4), length: length, payload: payload, nextSequence: 0)
            return finishOrWait(started)
        }
        let sequence = byte4
        // Taken out, not copied: with `partial` still holding the payload, appending to it
        // would copy the whole message so far on every report. On a throw below the
        // caller drops the partial message anyway.
        guard var current = partial.take() else {
            throw CTAPHIDError(
                .malformedPacket, "The security key sent a CTAPHID continuation packet outside a message."
            )
        }
        guard sequence == current.nextSequence else {
            throw CTAPHIDError(
                .invalidSequence,
                "The security key sent CTAPHID sequence \(sequence) where \(current.nextSequence) was due."
            )
        }
        let data = UnsafeRawBufferPointer(rebasing: report[CTAPHIDPacket.continuationHeaderSize...])
        let take = min(current.length - current.payload.count, data.count)
        current.payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: data[..<take]))
        current.nextSequence &+= 1
        return finishOrWait(current)
    }

    private mutating func finishOrWait(_ current: Partial) -> Step {
        if current.payload.count >= current.length {
            partial = nil
            return .complete(
                CTAPHIDMessage(channel: channel, command: current.command, payload: current.payload))
        }
        partial = current
        return .needMore
    }
}
