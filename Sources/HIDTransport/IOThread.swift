import Foundation
import Synchronization
import Transport

/// One dedicated thread that runs a device's blocking calls in order, off the cooperative pool.
///
/// Each open hidraw device or UDP socket owns one; jobs are bridged to async callers with a
/// checked continuation, and a cancelled caller's job is skipped if it has not started yet
/// (like `NIOThreadPool.runIfActive`).
final class IOThread: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
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
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
        }
    }

    private func enqueue(_ job: @escaping () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// Queues `job` without waiting for it (for clean-up from `deinit`).
    func submit(_ job: @escaping () -> Void) {
        _ = enqueue(job)
    }

    /// Lets queued jobs finish, then ends the thread; later jobs fail with `closed`.
    func shutdown() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    /// Runs `body` on the thread and returns its result.
    ///
    /// With `skipIfCancelled`, a job whose task was cancelled before the job started is not run
    /// and fails with `cancelled`; jobs that must happen anyway (sending CTAPHID_CANCEL, closing)
    /// pass false.
    func run<T: Sendable>(
        skipIfCancelled: Bool, _ body: @escaping @Sendable () throws(TransportError) -> T
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
                    do throws(TransportError) {
                        continuation.resume(returning: .success(try body()))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
                if !accepted {
                    continuation.resume(
                        returning: .failure(TransportError(.closed, "The device was closed.")))
                }
            }
        } onCancel: {
            cancelled.value.store(true, ordering: .releasing)
        }
        return try result.get()
    }
}

private final class CancelFlag: Sendable {
    let value = Atomic<Bool>(false)
}
