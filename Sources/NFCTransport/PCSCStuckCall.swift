import Synchronization
import Transport

/// One pcsc-lite call on a context's thread that its caller may stop waiting for while it runs:
/// `SCardTransmit` to a card that never answers (pcsc-lite and the reader driver wait without a
/// timeout, and nothing interrupts them), or `SCardConnect`/`SCardBeginTransaction` while
/// another application holds the card. Whichever of the job and the caller comes first decides:
/// a transmit given up on before it began is skipped, and a call given up on is counted against
/// its reader (``PCSCStuckReaders``) until it returns.
final class PCSCStuckCall: Sendable {
    /// What the call waits for.
    enum Kind: Sendable {
        /// The card's answer (`SCardTransmit`): given up on, it marks the reader stuck.
        case transmit
        /// The card itself, held by another application: given up on, it counts as a pending wait.
        case wait
    }
    private enum State {
        case queued, running, finished
        case gaveUp(counted: Bool)
    }
    private let state = Mutex(State.queued)
    private let reader: String
    private let kind: Kind

    init(reader: String, kind: Kind) {
        self.reader = reader
        self.kind = kind
    }

    /// Job side, first: false when the caller gave up before the job began.
    func begin() -> Bool {
        state.withLock { s in
            guard case .queued = s else { return false }
            s = .running
            return true
        }
    }

    /// Job side, last: takes the call off its reader's count when the caller had given up on it.
    func end() {
        state.withLock { s in
            if case .gaveUp(counted: true) = s { PCSCStuckReaders.remove(kind, reader) }
            s = .finished
        }
    }

    /// Caller side: stops waiting. Returns true when the job was inside its C call then (its
    /// thread is held until the call returns). A transmit counts from then on; a wait counts
    /// even before it began, since it will begin.
    func giveUp() -> Bool {
        state.withLock { s in
            switch s {
            case .queued:
                let counted = kind == .wait
                if counted { PCSCStuckReaders.add(kind, reader) }
                s = .gaveUp(counted: counted)
                return false
            case .running:
                PCSCStuckReaders.add(kind, reader)
                s = .gaveUp(counted: true)
                return true
            case .finished, .gaveUp:
                return false
            }
        }
    }
}

/// The pcsc-lite calls of this process that were given up on and still hold a thread, per
/// reader. A reader whose card stopped answering while a `SCardTransmit` waited is refused at
/// once with a typed error (pcscd holds the card for that call; another would only wait behind
/// it), and a reader with ``maximumWaits`` abandoned waits for another application is refused
/// as busy, so that a long-running process (the daemon) asked again and again keeps a bounded
/// number of threads per card. A call leaves the count when it returns: the card answered at
/// last, left the reader, or the other application let go.
enum PCSCStuckReaders {
    private struct Counts {
        var transmits = 0
        var waits = 0
    }
    private static let readers = Mutex<[String: Counts]>([:])

    /// The most abandoned waits for a card held by another application kept per reader.
    static let maximumWaits = 4

    static func add(_ kind: PCSCStuckCall.Kind, _ reader: String) {
        readers.withLock { readers in
            switch kind {
            case .transmit: readers[reader, default: Counts()].transmits += 1
            case .wait: readers[reader, default: Counts()].waits += 1
            }
        }
    }

    static func remove(_ kind: PCSCStuckCall.Kind, _ reader: String) {
        readers.withLock { readers in
            guard var counts = readers[reader] else { return }
            switch kind {
            case .transmit: counts.transmits = max(0, counts.transmits - 1)
            case .wait: counts.waits = max(0, counts.waits - 1)
            }
            readers[reader] = counts.transmits == 0 && counts.waits == 0 ? nil : counts
        }
    }

    /// Whether a `SCardTransmit` of this process is stuck on the card in `reader`.
    static func isStuck(_ reader: String) -> Bool {
        readers.withLock { ($0[reader]?.transmits ?? 0) > 0 }
    }

    /// Throws when `reader` must not be used now: a transmit of ours is stuck on its card, or
    /// ``maximumWaits`` waits of ours for it are still pending.
    static func check(_ reader: String) throws(TransportError) {
        let counts = readers.withLock { $0[reader] } ?? Counts()
        if counts.transmits > 0 { throw stuckError(reader) }
        if counts.waits >= maximumWaits {
            throw TransportError(
                .busy,
                "The security key in \(reader) is still held by another application; earlier waits for it have not ended."
            )
        }
    }

    /// The error every use of a reader with a stuck transmit gets.
    static func stuckError(_ reader: String) -> TransportError {
        TransportError(
            .deviceError, "The card in \(reader) stopped answering; take it off the reader and put it back.")
    }
}
