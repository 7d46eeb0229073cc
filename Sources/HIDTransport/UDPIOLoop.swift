#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Synchronization
import Transport

/// The one I/O thread every ``UDPReportPipe`` of the process shares: it runs the pipes' socket
/// calls in the order they were asked for and waits (`poll`) on all their sockets at once.
///
/// A host opening a fleet of UDP keys would otherwise start, hop to and stop a thread per key;
/// here a round of 128 keys costs one thread and a few wake-ups. Sockets are datagram sockets
/// whose calls do not block for long (`sendto` on a full buffer at most), and host names are
/// looked up elsewhere (``UDPReportPipe/open(endpoint:deadline:)``), so no pipe can hold the
/// others up. The thread starts with the first job and ends after ``lingering`` with nothing to
/// do, so an idle process keeps no thread and no timer.
final class UDPIOLoop: @unchecked Sendable {
    /// The process's loop, or why its wake-up pipe could not be made.
    static let shared: Result<UDPIOLoop, TransportError> = Result { () throws(TransportError) in
        try UDPIOLoop()
    }

    /// How long the thread waits for work before it ends (ms).
    static let lingering: Int32 = 1000

    /// A wait for datagrams on one socket, until ``step`` says it is done or ``deadline``.
    /// Touched only on the loop thread, except ``cancelled``.
    final class Wait: @unchecked Sendable {
        let socket: Int32
        let deadline: ContinuousClock.Instant
        /// Called when the socket is readable: true once the wait resumed its caller.
        let step: () -> Bool
        /// Called at the deadline, on cancellation or when the socket is closed: resumes the
        /// caller with what the wait has.
        let expire: () -> Void
        let cancelled = Atomic<Bool>(false)

        init(
            socket: Int32, deadline: ContinuousClock.Instant, step: @escaping () -> Bool,
            expire: @escaping () -> Void
        ) {
            self.socket = socket
            self.deadline = deadline
            self.step = step
            self.expire = expire
        }
    }

    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var threadRunning = false
        var wakePending = false
    }

    private let queue = Mutex(Queue())
    private let wakeRead: Int32
    private let wakeWrite: Int32
    // Only on the loop thread.
    private var waits: [Wait] = []

    private init() throws(TransportError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw TransportError(
                .system, "Could not create the UDP I/O thread's wake-up pipe (errno \(errno)).")
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    /// Queues `job` for the loop thread, starting the thread if it is not running.
    func submit(_ job: @escaping @Sendable () -> Void) {
        let (start, wake) = queue.withLock { queue -> (Bool, Bool) in
            queue.jobs.append(job)
            let start = !queue.threadRunning
            queue.threadRunning = true
            let wake = !start && !queue.wakePending
            if wake { queue.wakePending = true }
            return (start, wake)
        }
        if start {
            let thread = Thread { [self] in self.loop() }
            thread.name = "udp i/o"
            thread.start()
        } else if wake {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    /// Runs `body` on the loop thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws(TransportError) -> T)
        async throws(TransportError) -> T
    {
        let result: Result<T, TransportError> = await withCheckedContinuation { continuation in
            submit { continuation.resume(returning: Result { () throws(TransportError) -> T in try body() }) }
        }
        return try result.get()
    }

    /// Runs `start` on the loop thread; when it returns a socket, waits for datagrams on it and
    /// calls `step` each time one may be there, until `step` returns a value, or `deadline` or
    /// the calling task's cancellation, which return `expired()`. With `skipIfCancelled`, a task
    /// cancelled before `start` ran fails with `cancelled` and `start` does not run.
    func wait<T: Sendable>(
        deadline: ContinuousClock.Instant, skipIfCancelled: Bool,
        start: @escaping @Sendable () throws(TransportError) -> Int32,
        step: @escaping @Sendable () throws(TransportError) -> T?,
        expired: @escaping @Sendable () -> T
    ) async throws(TransportError) -> T {
        let box = Mutex<Wait?>(nil)
        let cancelled = Atomic<Bool>(false)
        let result: Result<T, TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<T, TransportError>, Never>) in
                submit { [self] in
                    if skipIfCancelled && cancelled.load(ordering: .acquiring) {
                        continuation.resume(
                            returning: .failure(TransportError(.cancelled, "The operation was cancelled.")))
                        return
                    }
                    let socket: Int32
                    do throws(TransportError) { socket = try start() } catch {
                        continuation.resume(returning: .failure(error))
                        return
                    }
                    let wait = Wait(
                        socket: socket, deadline: deadline,
                        step: {
                            do throws(TransportError) {
                                guard let value = try step() else { return false }
                                continuation.resume(returning: .success(value))
                            } catch {
                                continuation.resume(returning: .failure(error))
                            }
                            return true
                        },
                        expire: { continuation.resume(returning: .success(expired())) })
                    // Published before the flag is read, so a cancellation racing with this job
                    // is seen by one side or the other.
                    box.withLock { $0 = wait }
                    if cancelled.load(ordering: .acquiring) {
                        wait.cancelled.store(true, ordering: .releasing)
                    }
                    waits.append(wait)
                }
            }
        } onCancel: {
            cancelled.store(true, ordering: .releasing)
            box.withLock { $0 }?.cancelled.store(true, ordering: .releasing)
            // Wakes the loop, which then sees the flag.
            submit {}
        }
        return try result.get()
    }

    /// Ends the waits on `socket` with what they have; before the socket is closed. Loop thread.
    func expireWaits(on socket: Int32) {
        waits.removeAll { wait in
            guard wait.socket == socket else { return false }
            wait.expire()
            return true
        }
    }

    private func loop() {
        var idle = false
        while true {
            let jobs: [@Sendable () -> Void]? = queue.withLock { queue in
                queue.wakePending = false
                if queue.jobs.isEmpty && waits.isEmpty && idle {
                    queue.threadRunning = false
                    return nil
                }
                defer { queue.jobs = [] }
                return queue.jobs
            }
            guard let jobs else { return }
            for job in jobs { job() }
            let now = ContinuousClock.now
            waits.removeAll { wait in
                guard wait.cancelled.load(ordering: .acquiring) || wait.deadline <= now else { return false }
                wait.expire()
                return true
            }
            var descriptors = waits.map { pollfd(fd: $0.socket, events: Int16(POLLIN), revents: 0) }
            descriptors.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            let timeout: Int32
            if let first = waits.map(\.deadline).min() {
                // Rounded up, so the wait does not wake just before its deadline and spin.
                timeout = Int32(clamping: (now.duration(to: first) + .microseconds(999)).wholeMilliseconds)
            } else {
                timeout = jobs.isEmpty ? Self.lingering : 0
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            idle = ready == 0 && waits.isEmpty && jobs.isEmpty
            guard ready > 0 else { continue }
            if descriptors[descriptors.count - 1].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(wakeRead, &drain, drain.count) > 0 {}
            }
            var finished: Set<ObjectIdentifier> = []
            for (index, descriptor) in descriptors.dropLast().enumerated() where descriptor.revents != 0 {
                if waits[index].step() { finished.insert(ObjectIdentifier(waits[index])) }
            }
            if !finished.isEmpty { waits.removeAll { finished.contains(ObjectIdentifier($0)) } }
        }
    }
}
