import Dispatch
import Synchronization

/// Runs async work for a synchronous caller that owns no task: OpenSSH's `ssh-sk-helper`, which
/// calls the provider's C entry points from its main thread, and libFuzzer's callback. The work
/// runs on a detached task in the concurrency runtime's pool, and the calling thread, which is
/// not one of the pool's, waits on a semaphore. The pool's threads never block, so the work
/// cannot starve itself.
///
/// Must not be called from a task (it would block a pool thread); these synchronous entry points
/// are the only callers, and the one place that starts a detached task.
public enum SynchronousCall {
    /// The result of `work`, waited for on the calling thread; `nil` only if the task ended
    /// without one, which it cannot (nothing here may trap in the host).
    public static func run<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T? {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let value = await work()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        // The task stored the value before signalling.
        return result.withLock { $0.take() }
    }

    /// The result of `work`, or `fallback` if the task ended without one.
    public static func run<T: Sendable>(orElse fallback: T, _ work: @escaping @Sendable () async -> T) -> T {
        run(work) ?? fallback
    }
}
