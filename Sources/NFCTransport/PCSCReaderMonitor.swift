import Logging
import Transport

/// A change in the PC/SC reader landscape.
public struct PCSCReaderEvent: Hashable, Sendable, CustomStringConvertible {
    /// What happened.
    public struct Kind: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A reader appeared (or was there when watching started).
        public static let readerAdded = Kind(rawValue: "reader-added")
        /// A reader went away.
        public static let readerRemoved = Kind(rawValue: "reader-removed")
        /// A card was put on or in a reader (or was there when watching started).
        public static let cardInserted = Kind(rawValue: "card-inserted")
        /// A card was taken away.
        public static let cardRemoved = Kind(rawValue: "card-removed")
    }

    /// What happened.
    public var kind: Kind
    /// The reader it happened to.
    public var reader: String
    /// The card's ATR, for ``Kind/cardInserted``.
    public var atr: [UInt8]

    /// Creates an event.
    public init(kind: Kind, reader: String, atr: [UInt8] = []) {
        self.kind = kind
        self.reader = reader
        self.atr = atr
    }

    public var description: String { "\(kind.rawValue) \(reader)" }
}

/// Watches readers and cards come and go with `SCardGetStatusChange`, including pcsc-lite's
/// plug-and-play notification reader, on its own context and thread.
public struct PCSCReaderMonitor: Sendable {
    private let logger: Logger
    private let slice: Duration

    /// Creates a monitor; each wait lasts at most `slice` so cancellation is seen promptly even if
    /// an `SCardCancel` races the start of a wait.
    public init(slice: Duration = .seconds(1), logger: Logger = Logger(label: "securitykey.pcsc")) {
        self.slice = slice
        self.logger = logger
    }

    /// Reports the present readers and cards, then every change, until the task is cancelled
    /// (returns normally) or PC/SC fails (throws).
    public func run(_ onEvent: @Sendable (PCSCReaderEvent) async -> Void) async throws(TransportError) {
        let context = try await PCSCContext.establish(name: "pcsc-monitor")
        let slice = slice
        var states: [PCSCReaderState] = []
        var pnpState: UInt32 = 0
        var first = true
        do throws(TransportError) {
            while !Task.isCancelled {
                let current = states
                let needsList = first
                let pnpCurrent = pnpState
                let (events, next, pnpNext) = try await context.thread.run(
                    { () throws(TransportError) -> ([PCSCReaderEvent], [PCSCReaderState], UInt32) in
                        try Self.step(
                            context, watched: current, pnpState: pnpCurrent, relist: needsList, timeout: slice
                        )
                    }, onCancel: { context.cancel() })
                first = false
                states = next
                pnpState = pnpNext
                for event in events {
                    logger.debug("reader event", metadata: ["event": "\(event)"])
                    await onEvent(event)
                }
            }
        } catch  where error.code == .cancelled {
            // SCardCancel from our cancellation handler: a normal end.
        } catch {
            await context.release()
            throw error
        }
        await context.release()
    }

    /// One wait for a change (`SCardGetStatusChange` on the watched readers and the plug-and-play
    /// reader, after listing the readers when `relist`): the events it means, the new reader
    /// states and the new plug-and-play state. Runs on the context's thread.
    static func step(
        _ context: PCSCContext, watched current: [PCSCReaderState], pnpState pnpCurrent: UInt32, relist: Bool,
        timeout: Duration
    ) throws(TransportError) -> ([PCSCReaderEvent], [PCSCReaderState], UInt32) {
        var watched = current
        var events: [PCSCReaderEvent] = []
        if relist {
            watched = try Self.relist(context, known: watched, events: &events)
        }
        let pnp = PCSCReaderState(reader: PCSCContext.plugAndPlayReader, currentState: pnpCurrent)
        guard let changed = try context.getStatusChange(watched + [pnp], timeout: timeout) else {
            return (events, watched, pnpCurrent)
        }
        var updated: [PCSCReaderState] = []
        for var state in changed.dropLast() {
            if state.gone {
                events.append(PCSCReaderEvent(kind: .readerRemoved, reader: state.reader))
                continue
            }
            let was =
                state.currentState & PCSCReaderState.present != 0
                && state.currentState & PCSCReaderState.mute == 0
            if state.cardPresent && !was {
                events.append(PCSCReaderEvent(kind: .cardInserted, reader: state.reader, atr: state.atr))
            } else if !state.cardPresent && was {
                events.append(PCSCReaderEvent(kind: .cardRemoved, reader: state.reader))
            }
            state.currentState = state.eventState & ~PCSCReaderState.changed
            updated.append(state)
        }
        var pnpNext = pnpCurrent
        if let pnp = changed.last, pnp.eventState & PCSCReaderState.changed != 0 {
            pnpNext = pnp.eventState & ~PCSCReaderState.changed
            updated = try Self.relist(context, known: updated, events: &events)
        }
        return (events, updated, pnpNext)
    }

    /// Re-reads the reader list: readers that vanished are reported removed, new ones added.
    private static func relist(
        _ context: PCSCContext, known: [PCSCReaderState], events: inout [PCSCReaderEvent]
    ) throws(TransportError) -> [PCSCReaderState] {
        let names = try context.listReaders()
        var kept: [PCSCReaderState] = []
        for state in known {
            if names.contains(state.reader) {
                kept.append(state)
            } else {
                events.append(PCSCReaderEvent(kind: .readerRemoved, reader: state.reader))
            }
        }
        for name in names where !known.contains(where: { $0.reader == name }) {
            events.append(PCSCReaderEvent(kind: .readerAdded, reader: name))
            kept.append(PCSCReaderState(reader: name))
        }
        return kept
    }
}
