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

extension SynchronousCall {
    /// The result of `work`, waited for on the calling thread, which meanwhile performs each
    /// request `work` sends through its ``CallerThread`` with `perform`, in order, until `work`
    /// ends. For hosts whose callbacks must run on their own thread: a PAM application's
    /// conversation function (sudo's, a display manager's) is called only from the thread that
    /// called the module.
    public static func run<Request: Sendable, Reply: Sendable, T: Sendable>(
        orElse fallback: T, perform: (Request) -> Reply,
        _ work: @escaping @Sendable (CallerThread<Request, Reply>) async -> T
    ) -> T {
        let caller = CallerThread<Request, Reply>()
        let result = Mutex<T?>(nil)
        Task.detached {
            let value = await work(caller)
            result.withLock { $0 = value }
            caller.post(.done)
        }
        while case .request(let request, let continuation) = caller.next() {
            continuation.resume(returning: perform(request))
        }
        return result.withLock { $0.take() } ?? fallback
    }
}

/// The way back to the thread that called ``SynchronousCall/run(orElse:perform:_:)``: each
/// ``perform(_:)`` is done there, and its reply resumes the task.
public final class CallerThread<Request: Sendable, Reply: Sendable>: Sendable {
    enum Item: Sendable {
        case request(Request, CheckedContinuation<Reply, Never>)
        case done
    }
    private let queue = Mutex<[Item]>([])
    private let available = DispatchSemaphore(value: 0)

    init() {}

    /// `request` performed on the calling thread, and its reply.
    public func perform(_ request: Request) async -> Reply {
        await withCheckedContinuation { continuation in post(.request(request, continuation)) }
    }

    func post(_ item: Item) {
        queue.withLock { $0.append(item) }
        available.signal()
    }

    func next() -> Item {
        available.wait()
        return queue.withLock { $0.isEmpty ? .done : $0.removeFirst() }
    }
}
