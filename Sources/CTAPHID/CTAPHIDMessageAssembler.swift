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
        guard let reportChannel = CTAPHIDPacket.channel(of: report) else {
            partial = nil
            throw CTAPHIDError(.truncatedReport, "A CTAPHID report of \(report.count) bytes is too short.")
        }
        guard reportChannel == channel else { return .ignored }
        do {
            return try accept(report)
        } catch {
            partial = nil
            throw error
        }
    }

    private mutating func accept(_ report: [UInt8]) throws(CTAPHIDError) -> Step {
        guard report.count == reportSize else {
            throw CTAPHIDError(
                report.count < reportSize ? .truncatedReport : .malformedPacket,
                "A CTAPHID report of \(report.count) bytes does not match the report size of \(reportSize).")
        }
        let packet = try CTAPHIDPacket(report: report)
        switch packet.kind {
        case .initialization(let command, let length):
            guard partial == nil else {
                throw CTAPHIDError(
                    .unexpectedInitialization,
                    "The security key started a new CTAPHID message before finishing the previous one.")
            }
            let limit = CTAPHIDMessage.maxPayloadSize(reportSize: reportSize)
            guard length <= limit else {
                throw CTAPHIDError(
                    .messageTooLarge,
                    "The security key announced a \(length)-byte message, over the limit of \(limit) bytes.")
            }
            let take = min(length, packet.data.count)
            // The whole message's room at once (length is bounded above), so continuation
            // reports append without growing the buffer again.
            var payload: [UInt8] = []
            payload.reserveCapacity(length)
            payload.append(contentsOf: packet.data.prefix(take))
            let started = Partial(command: command, length: length, payload: payload, nextSequence: 0)
            return finishOrWait(started)
        case .continuation(let sequence):
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
            let take = min(current.length - current.payload.count, packet.data.count)
            current.payload.append(contentsOf: packet.data.prefix(take))
            current.nextSequence &+= 1
            return finishOrWait(current)
        }
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
