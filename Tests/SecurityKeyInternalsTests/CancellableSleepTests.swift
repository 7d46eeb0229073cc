import Synchronization
import Testing
import _SecurityKeyInternals

/// CancellableSleep: ends at its instant or on cancellation, and a cancelled sleeper's memory
/// comes back without waiting for the instant it slept to.
struct CancellableSleepTests {
    @Test func aCancelledSleepThrowsCancellationError() async {
        let task = Task { () async -> Bool in
            do throws(CancellationError) {
                try await CancellableSleep.sleep(until: .now + .seconds(3600))
                return false
            } catch { return true }
        }
        task.cancel()
        #expect(await task.value)
    }

    @Test func aSleepEndsAtItsInstantNotBefore() async throws {
        let instant = ContinuousClock.now + .milliseconds(30)
        try await CancellableSleep.sleep(until: instant, slice: .milliseconds(7))
        #expect(ContinuousClock.now >= instant)
    }

    /// Found by the daemon load benchmark (Docs/Performance.md, "Load and soak"): each request's
    /// watchdog slept to the request's deadline with one `Task.sleep` and was cancelled when the
    /// request ended, and the runtime keeps a cancelled sleep's timer job until its instant
    /// (swiftlang/swift#60441), so the daemon's heap grew by ~1 KiB per request for the length of
    /// the timeout. 20,000 cancelled sleepers held ~15 MB that way (glibc's mallinfo2 in-use
    /// bytes, `HeapStatistics`); in slices, their memory comes back once the slices end.
    @Test func cancelledSleepersGiveTheirMemoryBack() async {
        let count = 20_000
        let baseline = HeapStatistics.bytesInUse()
        let sleeping = Counter()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count {
                group.addTask {
                    sleeping.value.add(1, ordering: .relaxed)
                    try? await CancellableSleep.sleep(until: .now + .seconds(3600), slice: .milliseconds(50))
                }
            }
            // Every sleeper has asked for its timer before the cancellation.
            while sleeping.value.load(ordering: .relaxed) < count { await Task.yield() }
            try? await Task.sleep(for: .milliseconds(100))
            group.cancelAll()
        }
        // The slices' timers end within 50 ms; 10 s is a bound for a loaded machine, not a timing.
        var retained = HeapStatistics.bytesInUse() - baseline
        for _ in 0..<100 where retained > 3_000_000 {
            try? await Task.sleep(for: .milliseconds(100))
            retained = HeapStatistics.bytesInUse() - baseline
        }
        #expect(retained < 3_000_000, "\(count) cancelled sleepers still hold \(retained) bytes")
    }

    /// How many sleepers have started.
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }
}
