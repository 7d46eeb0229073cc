#if canImport(Glibc)
    import Glibc
#endif
import Logging
import Synchronization
import Transport

extension PCSCDiscovery {
    /// The longest single `SCardGetStatusChange` wait of ``events()``. Termination cancels a
    /// wait at once with `SCardCancel`; the bound only matters when termination comes just
    /// before a wait starts (pcsc-lite drops a cancel with no wait in progress), and is how long
    /// the watch thread may then linger.
    static let eventWaitLimit: Duration = .seconds(10)

    /// How often a watch whose pcscd is gone tries to establish a context again.
    static let serviceRetryInterval: Duration = .seconds(1)

    /// The readers with a card in them when iteration starts (a present card that is not mute),
    /// as ``DeviceEvent/arrived(_:)`` with the descriptor ``devices()`` gives the reader; then
    /// each card put on a reader as an arrival, and each card taken away or reader unplugged as
    /// ``DeviceEvent/removed(uri:)``.
    ///
    /// Each stream owns one PC/SC context on its own thread, which waits in
    /// `SCardGetStatusChange` on the readers and pcsc-lite's plug-and-play reader (new readers);
    /// when the consumer stops iterating, `SCardCancel` ends the wait and the thread. When
    /// pcscd stops (or is not running yet) the cards reported are reported removed, and the
    /// watch establishes a new context every ``serviceRetryInterval`` until pcscd answers again;
    /// then the cards present arrive again. A long-lived consumer (the daemon, `fleet --watch`)
    /// thus follows a restarted pcscd without being restarted itself.
    public func events() -> AsyncStream<DeviceEvent> {
        let logger = logger
        return AsyncStream { continuation in
            let watch = PCSCEventWatch()
            continuation.onTermination = { _ in watch.stop() }
            let thread = BlockingIOThread(name: "pcsc events", closedMessage: "The PC/SC event watch ended.")
            thread.shutdown(after: {
                watch.run(on: thread, logger: logger) { continuation.yield($0) }
                continuation.finish()
            })
        }
    }
}

/// The state of one ``PCSCDiscovery/events()`` stream, shared between its watch thread and
/// whoever terminates it.
final class PCSCEventWatch: Sendable {
    /// The watch thread's kernel name (at most 15 bytes).
    static let threadName = "pcsc events"
    private let stopped = Atomic<Bool>(false)
    private let context = Mutex<PCSCContext?>(nil)

    /// Ends the watch: the flag the loop checks, and `SCardCancel` for a wait in progress.
    func stop() {
        stopped.store(true, ordering: .releasing)
        context.withLock { $0 }?.cancel()
    }

    private var isStopped: Bool { stopped.load(ordering: .acquiring) }

    /// Watches readers and cards until stopped, on new contexts while pcscd goes and comes back.
    /// Runs on `thread`, which it holds.
    func run(on thread: BlockingIOThread, logger: Logger, yield: (DeviceEvent) -> Void) {
        BlockingIOThread.nameCurrentThread(Self.threadName)
        var reported: Set<String> = []
        // Said once per outage at info; retries in between at debug.
        var outage = false
        while !isStopped {
            let failure = watch(
                on: thread, logger: logger, reported: &reported, outage: &outage, yield: yield)
            guard let failure, !isStopped else { return }
            // The service went (or never came): the cards it showed are gone with it, and
            // whatever it shows once back arrives anew.
            for uri in reported.sorted() { yield(.removed(uri: uri)) }
            reported = []
            if !outage {
                logger.info("PC/SC service unavailable; waiting for it", metadata: ["reason": "\(failure)"])
                outage = true
            }
            // A plain sleep: a stop during it ends the watch at most this late, and a machine
            // without pcscd pays one wake-up per interval.
            usleep(useconds_t(clamping: PCSCDiscovery.serviceRetryInterval.wholeMilliseconds * 1000))
        }
    }

    /// Watches on one context until stopped (nil) or until PC/SC fails (the error); clears
    /// `outage` once a context is established.
    private func watch(
        on thread: BlockingIOThread, logger: Logger, reported: inout Set<String>, outage: inout Bool,
        yield: (DeviceEvent) -> Void
    ) -> TransportError? {
        let pcsc: PCSCContext
        do throws(TransportError) {
            pcsc = try PCSCContext.establishOnCurrentThread(thread)
        } catch {
            logger.debug("no PC/SC events", metadata: ["reason": "\(error)"])
            return error
        }
        if outage { logger.info("PC/SC service available again") }
        outage = false
        context.withLock { $0 = pcsc }
        defer {
            context.withLock { $0 = nil }
            pcsc.releaseOnCurrentThread()
        }
        // A stop that came before the context was published found nothing to cancel.
        if isStopped { return nil }
        var watched: [PCSCReaderState] = []
        var pnpState: UInt32 = 0
        var first = true
        while !isStopped {
            do throws(TransportError) {
                let (events, next, pnpNext) = try PCSCReaderMonitor.step(
                    pcsc, watched: watched, pnpState: pnpState, relist: first,
                    timeout: PCSCDiscovery.eventWaitLimit)
                first = false
                watched = next
                pnpState = pnpNext
                for event in events {
                    logger.debug("reader event", metadata: ["event": "\(event)"])
                    let uri = "pcsc:\(event.reader)"
                    switch event.kind {
                    case .cardInserted where !reported.contains(uri):
                        reported.insert(uri)
                        yield(.arrived(DeviceDescriptor(uri: uri, transport: .nfc, product: event.reader)))
                    case .cardRemoved, .readerRemoved:
                        if reported.remove(uri) != nil { yield(.removed(uri: uri)) }
                    default:
                        break
                    }
                }
            } catch {
                if isStopped { return nil }
                logger.debug("PC/SC events interrupted", metadata: ["reason": "\(error)"])
                return error
            }
        }
        return nil
    }
}
