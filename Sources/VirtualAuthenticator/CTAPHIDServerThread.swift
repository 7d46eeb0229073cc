import Foundation
import Synchronization
import Transport

/// One dedicated thread for a CTAPHID server's blocking calls (`poll`/`recvfrom` on a UDP
/// socket, `read` on /dev/uhid), so they never run on the cooperative pool.
///
/// Jobs run in order; a job whose caller was cancelled before it started is skipped.
final class CTAPHIDServerThread: @unchecked Sendable {
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

    /// Lets queued jobs finish, then ends the thread.
    func shutdown() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    /// Runs `body` on the thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws(TransportError) -> T)
        async throws(TransportError) -> T
    {
        let cancelled = ServerCancelFlag()
        let result: Result<T, TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<T, TransportError>, Never>) in
                condition.lock()
                let accepted = !stopping
                if accepted {
                    jobs.append {
                        if cancelled.value.load(ordering: .acquiring) {
                            continuation.resume(
                                returning: .failure(TransportError(.cancelled, "The server was stopped.")))
                            return
                        }
                        do throws(TransportError) {
                            continuation.resume(returning: .success(try body()))
                        } catch {
                            continuation.resume(returning: .failure(error))
                        }
                    }
                    condition.signal()
                }
                condition.unlock()
                if !accepted {
                    continuation.resume(
                        returning: .failure(TransportError(.closed, "The server was closed.")))
                }
            }
        } onCancel: {
            cancelled.value.store(true, ordering: .releasing)
        }
        return try result.get()
    }
}

private final class ServerCancelFlag: Sendable {
    let value = Atomic<Bool>(false)
}
