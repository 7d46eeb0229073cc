#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
import _SecurityKeyInternals

/// One dedicated OS thread that runs a device's or a server's blocking calls in order, off the
/// cooperative pool (hidapi reads, `poll`/`recvfrom`, pcsc-lite, /dev/uhid).
///
/// Jobs are bridged to async callers with a checked continuation, like
/// `NIOThreadPool.runIfActive`. pcsc-lite also wants one context per thread, which this gives.
///
/// It is also a `TaskExecutor`: a caller that runs a whole operation under
/// `withTaskExecutorPreference(thread)` has its task's code run on this thread, and then
/// ``run(skipIfCancelled:_:onCancel:)`` calls the body in place instead of handing it over and
/// waiting to be woken on the cooperative pool again (the thread hop of Docs/Performance.md).
/// Blocking calls still only ever block this thread. Plain pthreads rather than Foundation's
/// `Thread` and `NSCondition`, which sit on every job's path.
public final class BlockingIOThread: TaskExecutor, @unchecked Sendable {
    private enum Work {
        case closure(() -> Void)
        case job(UnownedJob)
    }

    // `work` and `stopping` are guarded by `mutex`; `wake` is signalled when either changes.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let wake: UnsafeMutablePointer<pthread_cond_t>
    private var work: [Work] = []
    private var stopping = false
    /// The thread, for ``isCurrent``; set once by `init` before any job can be queued.
    @usableFromInline var thread = pthread_t()
    @usableFromInline let closedMessage: String
    private let name: String

    /// Starts the thread; `closedMessage` is the sentence of the `closed` error a job gets
    /// once the thread is shutting down.
    public init(name: String, closedMessage: String = "The device was closed.") {
        self.closedMessage = closedMessage
        self.name = name
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        wake = .allocate(capacity: 1)
        pthread_cond_init(wake, nil)
        // The thread holds this object until its loop ends (after shutdown), as Foundation's
        // Thread held its closure.
        let box = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                let owner = Unmanaged<BlockingIOThread>.fromOpaque(argument).takeRetainedValue()
                OSThread.nameCurrent(owner.name)
                owner.loop()
                return nil
            }, box)
        if created != 0 {
            // No thread: every job fails with `closed` instead of waiting forever.
            Unmanaged<BlockingIOThread>.fromOpaque(box).release()
            stopping = true
            return
        }
        pthread_detach(thread)
    }

    deinit {
        pthread_cond_destroy(wake)
        wake.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    private func loop() {
        while true {
            pthread_mutex_lock(mutex)
            while work.isEmpty && !stopping { pthread_cond_wait(wake, mutex) }
            if work.isEmpty {
                pthread_mutex_unlock(mutex)
                return
            }
            let item = work.removeFirst()
            pthread_mutex_unlock(mutex)
            switch item {
            case .closure(let job): job()
            case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
    }

    /// Whether the caller runs on this thread (a task that prefers it as its executor does).
    public var isCurrent: Bool { pthread_equal(pthread_self(), thread) != 0 }

    @usableFromInline func enqueue(_ job: @escaping () -> Void) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard !stopping else { return false }
        work.append(.closure(job))
        pthread_cond_signal(wake)
        return true
    }

    /// Runs a job of a task that prefers this executor. Once the thread is shutting down the
    /// job goes to the global concurrent executor: a task must never be dropped.
    public func enqueue(_ job: consuming ExecutorJob) {
        pthread_mutex_lock(mutex)
        if stopping {
            pthread_mutex_unlock(mutex)
            globalConcurrentExecutor.enqueue(job)
            return
        }
        work.append(.job(UnownedJob(job)))
        pthread_cond_signal(wake)
        pthread_mutex_unlock(mutex)
    }

    /// Lets queued jobs (and `job`, queued last, if given) finish, then ends the thread; later
    /// jobs fail with `closed`. For clean-up where nobody can await.
    public func shutdown(after job: (() -> Void)? = nil) {
        pthread_mutex_lock(mutex)
        if !stopping, let job { work.append(.closure(job)) }
        stopping = true
        pthread_cond_signal(wake)
        pthread_mutex_unlock(mutex)
    }

    /// Runs `body` on the thread and returns its result.
    ///
    /// With `skipIfCancelled`, a job whose task was cancelled before the job started is not run
    /// and fails with `cancelled`; jobs that must happen anyway (sending CTAPHID_CANCEL, closing)
    /// pass false. `onCancel` runs, on whatever thread cancels, if the calling task is cancelled
    /// meanwhile, and must make a running `body` return soon (for example `SCardCancel`).
    /// Called on the thread itself (the task prefers this executor), `body` runs in place.
    // Inlinable so that each caller gets a copy specialised for its T: an unspecialised generic
    // looks up Result<T>'s and the continuation's metadata at run time on every job.
    @inlinable
    public func run<T: Sendable>(
        skipIfCancelled: Bool = false,
        _ body: @escaping @Sendable () throws(TransportError) -> T,
        onCancel: @escaping @Sendable () -> Void = {}
    ) async throws(TransportError) -> T {
        if isCurrent {
            if skipIfCancelled && Task.isCancelled {
                throw TransportError(.cancelled, "The operation was cancelled.")
            }
            let result = await withTaskCancellationHandler {
                Result { () throws(TransportError) -> T in try body() }
            } onCancel: {
                onCancel()
            }
            return try result.get()
        }
        let cancelled = CancelFlag()
        let result: Result<T, TransportError> = await withTaskCancellationHandler {
            // Unsafe (unchecked) only to spare the checked wrapper's allocation per job: the
            // continuation is resumed exactly once, by the job or, when it was refused, here.
            await withUnsafeContinuation {
                (continuation: UnsafeContinuation<Result<T, TransportError>, Never>) in
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
    ///
    /// With `cancelGivesUp`, cancelling the calling task gives up at once too (the caller gets
    /// `cancelled`): for a wait that `onCancel` cannot end, such as `SCardBeginTransaction`.
    public func run<T: Sendable>(
        givingUpAt giveUp: ContinuousClock.Instant, cancelGivesUp: Bool = false,
        _ body: @escaping @Sendable () throws(TransportError) -> T,
        onCancel: @escaping @Sendable () -> Void = {}
    ) async throws(TransportError) -> T {
        let outcome = ResumeOnce<Result<T, TransportError>>()
        let result = await withTaskGroup(of: Void.self, returning: Result<T, TransportError>.self) { group in
            // The watchdog: a child task, so the caller's task owns it and it ends with the call.
            // In slices: a cancelled Task.sleep keeps ~1 KiB until giveUp (CancellableSleep), per call.
            group.addTask {
                do { try await CancellableSleep.sleep(until: giveUp) } catch { return }
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
                if cancelGivesUp {
                    outcome.resume(with: .failure(TransportError(.cancelled, "The operation was cancelled.")))
                }
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
