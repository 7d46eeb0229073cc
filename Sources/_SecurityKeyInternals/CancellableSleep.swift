/// A sleep to a far instant that gives its memory back soon after it is cancelled.
///
/// `Task.sleep` enqueues a timer job for the instant asked for; cancelling the sleeping task
/// resumes it at once, but the job and its task stay allocated until that instant comes
/// (swiftlang/swift#60441). A watchdog that sleeps to a request's deadline and is cancelled when
/// the request ends keeps about 1 KiB per request for the rest of the timeout: under load, RSS
/// that grows with the request rate times the timeout. Sleeping in slices bounds that to one slice.
public enum CancellableSleep {
    /// Sleeps until `instant`, in slices of at most `slice`; throws `CancellationError` once
    /// the task is cancelled (within the slice's timer, which is freed by the slice's end).
    public static func sleep(
        until instant: ContinuousClock.Instant, slice: Duration = .seconds(1)
    ) async throws(CancellationError) {
        let clock = ContinuousClock()
        while true {
            let now = clock.now
            guard now < instant else { return }
            let next = instant - now > slice ? now + slice : instant
            do { try await Task.sleep(until: next, clock: clock) } catch { throw CancellationError() }
        }
    }
}
