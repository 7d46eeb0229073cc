import Foundation
import Synchronization

/// One dedicated OS thread that runs a device's or a server's blocking calls in order, off the
/// cooperative pool (hidapi reads, `poll`/`recvfrom`, pcsc-lite, /dev/uhid).
///
/// Jobs are bridged to async callers with a checked continuation, like
/// `NIOThreadPool.runIfActive`. pcsc-lite also wants one context per thread, which this gives.
public final class BlockingIOThread: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [() -> Void] = []
    private var stopping = false
    @usableFromInline let closedMessage: String

    /// Starts the thread; `closedMessage` is the sentence of the `closed` error a job gets
    /// once the thread is shutting down.
    public init(name: String, closedMessage: String = "The device was closed.") {
        self.closedMessage = closedMessage
        let thread = Thread { [self] in self.loop() }
        thread.name = name
        thread.start()
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
        }
    }

    @usableFromInline func enqueue(_ job: @escaping () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// Lets queued jobs (and `job`, queued last, if given) finish, then ends the thread; later
    /// jobs fail with `closed`. For clean-up where nobody can await.
    public func shutdown(after job: (() -> Void)? = nil) {
        condition.lock()
        if !stopping, let job { jobs.append(job) }
        stopping = true
        condition.signal()
        condition.unlock()
    }

    /// Runs `body` on the thread and returns its result.
    ///
    /// With `skipIfCancelled`, a job whose task was cancelled before the job started is not run
    /// and fails with `cancelled`; jobs that must happen anyway (sending CTAPHID_CANCEL, closing)
    /// pass false. `onCancel` runs, on whatever thread cancels, if the calling task is cancelled
    /// meanwhile, and must make a running `body` return soon (for example `SCardCancel`).
    // Inlinable so that each caller gets a copy specialised for its T: an unspecialised generic
    // looks up Result<T>'s and the continuation's metadata at run time on every job.
    @inlinable
    public func run<T: Sendable>(
        skipIfCancelled: Bool = false,
        _ body: @escaping @Sendable () throws(TransportError) -> T,
        onCancel: @escaping @Sendable () -> Void = {}
    ) async throws(TransportError) -> T {
        let cancelled = CancelFlag()
        let result: Result<T, TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<T, TransportError>, Never>) in
                let accepted = enqueue {
                    if skipIfCancelled && cancelled.value.load(ordering: .acquiring) {
                        continuation.resume(
                            returning: .failure(TransportError(.cancelled, "The operation was cancelled.")))
                        return
                    }
                    continuation.resume(returning: Result { () throws(TransportError) -> T in try body() })
                }
                if !accepted {
                    continuation.resume(returning: .failure(TransportError(.closed, closedMessage)))
                }
            }
        } onCancel: {
            cancelled.value.store(true, ordering: .releasing)
            onCancel()
        }
        return try result.get()
    }
}

extension BlockingIOThread {
    /// Runs `body` on the thread with a fresh ``CancellationSignal`` that the calling task's
    /// cancellation raises; `body` polls it or sleeps on it between bounded waits.
    public func runCancellable<T: Sendable>(
        skipIfCancelled: Bool = false,
        _ body: @escaping @Sendable (CancellationSignal) throws(TransportError) -> T
    ) async throws(TransportError) -> T {
        let signal = CancellationSignal()
        return try await run(
            skipIfCancelled: skipIfCancelled, { () throws(TransportError) -> T in try body(signal) },
            onCancel: { signal.cancel() })
    }
}

@usableFromInline final class CancelFlag: Sendable {
    @usableFromInline let value = Atomic<Bool>(false)
    @usableFromInline init() {}
}

extension BlockingIOThread {
    /// Runs `body` on the thread like ``run(skipIfCancelled:_:onCancel:)``, but stops waiting
    /// for it at `giveUp`: the caller then gets `timeout` while `body` goes on running on the
    /// thread, its result discarded.
    ///
    /// For C calls nothing can interrupt, such as `SCardTransmit` to a card that never answers
    /// (pcsc-lite and the reader driver wait for it without a timeout). Every later job queues
    /// behind the stuck one, so a caller that was given up on must treat the thread as lost:
    /// queue only clean-up on it (``shutdown(after:)``) and wait for nothing more.
    public func run<T: Sendable>(
        givingUpAt giveUp: ContinuousClock.Instant,
        _ body: @escaping @Sendable () throws(TransportError) -> T,
        onCancel: @escaping @Sendable () -> Void = {}
    ) async throws(TransportError) -> T {
        let outcome = ResumeOnce<Result<T, TransportError>>()
        let result = await withTaskGroup(of: Void.self, returning: Result<T, TransportError>.self) { group in
            // The watchdog: a child task, so the caller's task owns it and it ends with the call.
            group.addTask {
                do { try await Task.sleep(until: giveUp, clock: .continuous) } catch { return }
                outcome.resume(
                    with: .failure(
                        TransportError(.timeout, "The device did not answer in time and stopped responding.")))
            }
            let result = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, TransportError>, Never>) in
                    outcome.install(continuation)
                    let accepted = enqueue {
                        outcome.resume(with: Result { () throws(TransportError) -> T in try body() })
                    }
                    if !accepted { outcome.resume(with: .failure(TransportError(.closed, closedMessage))) }
                }
            } onCancel: {
                onCancel()
            }
            group.cancelAll()
            return result
        }
        return try result.get()
    }
}

/// A continuation resumed by whichever comes first of several sources; later ones are dropped.
final class ResumeOnce<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var early: Value?
        var done = false
    }
    private let state = Mutex(State())

    init() {}

    /// Gives the continuation to resume; resumes it at once if a value came first.
    func install(_ continuation: CheckedContinuation<Value, Never>) {
        let early = state.withLock { s -> Value? in
            if let value = s.early {
                s.early = nil
                return value
            }
            s.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Resumes with `value` unless something resumed already.
    func resume(with value: Value) {
        let continuation = state.withLock { s -> CheckedContinuation<Value, Never>? in
            guard !s.done else { return nil }
            s.done = true
            guard let c = s.continuation else {
                s.early = value
                return nil
            }
            s.continuation = nil
            return c
        }
        continuation?.resume(returning: value)
    }
}
