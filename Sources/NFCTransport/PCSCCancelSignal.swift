import Foundation

/// A cancellation request the I/O thread can poll and wait on.
final class PCSCCancelSignal: @unchecked Sendable {
    private let condition = NSCondition()
    private var cancelled = false

    /// Marks the operation cancelled and wakes a waiter.
    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }

    /// True once ``cancel()`` ran.
    var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }

    /// Sleeps up to `duration`, returning early (true) when cancelled.
    func wait(_ duration: Duration) -> Bool {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let until = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !cancelled {
            if !condition.wait(until: until) { break }
        }
        return cancelled
    }
}
