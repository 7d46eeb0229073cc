/// Collects a complete response across `61xx` (GET RESPONSE) and `6Cxx` (re-issue with the
/// right Le) rounds, as ISO/IEC 7816-4 §5.3.4 and ISO/IEC 7816-3 §12.2 describe.
///
/// A pure state machine: the caller sends ``Step/send(_:)`` commands and feeds each response
/// back until ``Step/complete(_:)``.
public struct ResponseAssembler: Sendable {
    /// What to do next.
    public enum Step: Hashable, Sendable {
        /// Transmit this command and pass its response to ``ResponseAssembler/receive(_:)``.
        case send(CommandAPDU)
        /// The whole response: all data gathered, and the final status word.
        case complete(ResponseAPDU)
    }

    private var lastSent: CommandAPDU
    private var collected: [UInt8] = []
    private var rounds = 0
    private let maxRounds: Int
    private let maxResponseCount: Int

    /// Starts assembling the response to `command` (the last segment of a chain, if chained).
    public init(command: CommandAPDU, maxRounds: Int = 1024, maxResponseCount: Int = 1 << 20) {
        self.lastSent = command
        self.maxRounds = maxRounds
        self.maxResponseCount = maxResponseCount
    }

    /// Takes the response to the last command sent and says what to do next.
    public mutating func receive(_ response: ResponseAPDU) throws(ISO7816Error) -> Step {
        rounds += 1
        guard rounds <= maxRounds else {
            throw ISO7816Error(.tooManyRounds, "The card kept the response going for too many rounds.")
        }
        if let remaining = response.status.bytesRemaining {
            try append(response.data)
            lastSent = .getResponse(le: remaining)
            return .send(lastSent)
        }
        if let le = response.status.correctLe {
            // The data of a 6Cxx response is meaningless; ask again with the card's Le.
            lastSent.le = le
            return .send(lastSent)
        }
        try append(response.data)
        return .complete(ResponseAPDU(data: collected, status: response.status))
    }

    private mutating func append(_ data: [UInt8]) throws(ISO7816Error) {
        guard collected.count + data.count <= maxResponseCount else {
            throw ISO7816Error(.tooLong, "The card's response exceeds \(maxResponseCount) bytes.")
        }
        collected += data
    }
}
