import Foundation
import Transport

/// One dedicated OS thread that runs blocking pcsc-lite calls in order, so they never block the
/// cooperative pool (pcsc-lite also wants one context per thread).
final class PCSCThread: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [() -> Void] = []
    private var stopping = false

    init(name: String) {
        let thread = Thread { [self] in self.loop() }
        thread.name = name
        thread.start()
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty && stopping {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
        }
    }

    /// Runs `job` after the jobs already queued; false once the thread is stopping.
    private func submit(_ job: @escaping () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// Lets the thread finish the queued jobs and end.
    func stop() {
        stop(after: nil)
    }

    /// Queues a last job (if any), then lets the thread end; for clean-up where nobody can await.
    func stop(after job: (() -> Void)?) {
        condition.lock()
        if !stopping, let job { jobs.append(job) }
        stopping = true
        condition.signal()
        condition.unlock()
    }

    /// Runs `body` on the thread and returns its result; `onCancel` runs (on whatever thread
    /// cancels) if the calling task is cancelled meanwhile, and must make `body` return soon.
    func run<T: Sendable>(
        _ body: @escaping @Sendable () throws(TransportError) -> T,
        onCancel: @escaping @Sendable () -> Void = {}
    ) async throws(TransportError) -> T {
        let result: Result<T, TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<T, TransportError>, Never>) in
                let accepted = submit {
                    continuation.resume(returning: Result { () throws(TransportError) -> T in try body() })
                }
                if !accepted {
                    continuation.resume(
                        returning: .failure(TransportError(.closed, "The PC/SC connection is closed.")))
                }
            }
        } onCancel: {
            onCancel()
        }
        return try result.get()
    }
}

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
