import _SecurityKeyInternals

/// A cancellation request that a job running on a ``BlockingIOThread`` polls between bounded
/// waits, and can sleep on so that cancelling wakes it at once.
public final class CancellationSignal: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = ConditionLock()
    private var cancelled = false

    /// A signal not yet raised.
    public init() {}

    /// Marks the operation cancelled and wakes a waiter.
    public func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }

    /// True once ``cancel()`` ran.
    public var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }

    /// Sleeps up to `duration`, returning early with true when cancelled (false: the time passed).
    public func wait(_ duration: Duration) -> Bool {
        let until = ContinuousClock.now + duration
        condition.lock()
        defer { condition.unlock() }
        while !cancelled {
            if !condition.wait(until: until) { break }
        }
        return cancelled
    }
}
