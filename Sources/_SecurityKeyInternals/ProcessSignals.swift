#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Dispatch
import Synchronization

/// Signals sent to the process, received through dispatch sources (never a signal handler that
/// does work): the one way a program of ours hears SIGINT, SIGTERM or SIGUSR1 as values.
public enum ProcessSignals {
    /// SIGINT and SIGTERM, by name: the signals that ask a program to stop.
    public static let interruption: [(number: Int32, name: String)] = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")]

    /// `signals`, by name, as they arrive (their default actions are off meanwhile); `stop` ends
    /// the stream and the watching.
    public static func names(_ signals: [(number: Int32, name: String)] = interruption)
        -> (stream: AsyncStream<String>, stop: () -> Void)
    {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        var sources: [any DispatchSourceSignal] = []
        for (number, name) in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(name) }
            source.resume()
            sources.append(source)
        }
        return (
            stream,
            {
                for source in sources { source.cancel() }
                continuation.finish()
            }
        )
    }

    /// Runs `body` until one of `stopping` (SIGINT or SIGTERM) arrives, then cancels it and
    /// waits for it to finish, and answers the signal's name ("end" if the body ended by
    /// itself); each of `handled` (SIGUSR1, say) that arrives meanwhile runs `handler` with its
    /// name. The body's error, if it fails first, is thrown.
    public static func runUntilInterrupted(
        _ body: @escaping @Sendable () async throws -> Void,
        by stopping: [(number: Int32, name: String)] = interruption,
        handling handled: [(number: Int32, name: String)] = [],
        _ handler: @escaping @Sendable (String) async -> Void = { _ in }
    ) async throws -> String {
        let (stream, stop) = names(stopping)
        defer { stop() }
        let (others, stopOthers) = names(handled)
        defer { stopOthers() }
        return try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                try await body()
                return nil
            }
            group.addTask {
                for await name in others { await handler(name) }
                return nil
            }
            group.addTask {
                for await name in stream { return name }
                return nil
            }
            // The watcher of `handled` runs until cancelled, so the first child to end is the
            // body or the watcher of SIGINT and SIGTERM.
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first ?? "end"
        }
    }

    /// Runs `body`; the first of `stopping` (SIGINT or SIGTERM) cancels it, and if it has not
    /// ended `grace` seconds later (a blocking read, such as a prompt's, cannot be cancelled)
    /// `giveUp` runs (it ends the process). Once cancelled, the body's error is thrown when
    /// `keeps` says it tells more than the cancellation (what the body was doing when it was
    /// cancelled), else `CancellationError`.
    public static func runCancellingOnInterrupt(
        _ body: @escaping @Sendable () async throws -> Void,
        by stopping: [(number: Int32, name: String)] = interruption, grace: Double = 1,
        keeping keeps: (any Error) -> Bool, giveUp: @escaping @Sendable () -> Void
    ) async throws {
        let (signals, stop) = names(stopping)
        let finished = FinishedFlag()
        defer {
            finished.value.store(true, ordering: .releasing)
            stop()
        }
        // Children answer true (the body finished) or false (a signal came).
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await body()
                return true
            }
            group.addTask {
                var received = 0
                for await _ in signals {
                    received += 1
                    if received > 1 { giveUp() }
                    if received == 1 {
                        // Make a cancelled but still blocked body end after the grace period.
                        DispatchQueue.global().asyncAfter(deadline: .now() + grace) {
                            if !finished.value.load(ordering: .acquiring) { giveUp() }
                        }
                        return false
                    }
                }
                return false
            }
            // The first child to end decides: the body's result, or the signal's cancellation.
            defer { group.cancelAll() }
            if try await group.next() == true { return }
            group.cancelAll()
            // A signal: the body, cancelled, usually ends at once.
            do {
                while let done = try await group.next() {
                    if done { break }
                }
            } catch where keeps(error) {
                throw error
            } catch {}
            throw CancellationError()
        }
    }
}

/// Whether a ``ProcessSignals/runCancellingOnInterrupt(_:by:grace:keeping:giveUp:)`` has ended,
/// so that its pending grace-period `giveUp` does nothing.
private final class FinishedFlag: Sendable {
    let value = Atomic<Bool>(false)
}
