#if canImport(Glibc)
    import Glibc
#endif
import _SecurityKeyInternals
import Synchronization
import Transport

/// A wait for datagrams on one socket, run by ``UDPIOLoop``: the loop calls ``begin()`` once,
/// ``readable()`` each time the socket may hold a datagram, and ``expire()`` at the deadline, on
/// cancellation or when the socket is closed. All three run on the loop thread.
///
/// A wait is an object its owner keeps and starts again for every exchange (a UDP pipe has one),
/// so an exchange costs the loop no allocation: no record, no closures.
protocol UDPIOWait: AnyObject, Sendable {
    /// When the wait ends with what it has; set before it is started.
    var deadline: ContinuousClock.Instant { get }
    /// Whether the waiting task was cancelled; read by the loop, set from any thread.
    var isCancelled: Bool { get }
    /// The socket to watch; valid once ``begin()`` returned true.
    var socket: Int32 { get }
    /// Starts the wait (sends what goes out first); false when it already resumed its caller.
    func begin() -> Bool
    /// The socket is readable: true once the wait resumed its caller.
    func readable() -> Bool
    /// Deadline, cancellation or closed socket: resumes the caller with what the wait has.
    func expire()
}

/// The one I/O thread every ``UDPReportPipe`` of the process shares: it runs the pipes' socket
/// calls in the order they were asked for and waits (`poll`) on all their sockets at once.
///
/// A host opening a fleet of UDP keys would otherwise start, hop to and stop a thread per key;
/// here a round of 128 keys costs one thread and a few wake-ups. Sockets are datagram sockets
/// whose calls do not block for long (`sendto` on a full buffer at most), and host names are
/// looked up elsewhere (``UDPReportPipe/open(endpoint:deadline:)``), so no pipe can hold the
/// others up. The thread starts with the first job and ends after ``lingering`` with nothing to
/// do, so an idle process keeps no thread and no timer.
///
/// Waits (``UDPIOWait``) are objects their pipes reuse, and the loop's own lists and `poll` set
/// keep their storage from one turn to the next: an exchange allocates nothing here.
final class UDPIOLoop: @unchecked Sendable {
    /// The process's loop, or why its wake-up pipe could not be made.
    static let shared: Result<UDPIOLoop, TransportError> = Result { () throws(TransportError) in
        try UDPIOLoop()
    }

    /// How long the thread waits for work before it ends (ms).
    static let lingering: Int32 = 1000

    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var starting: [any UDPIOWait] = []
        var threadRunning = false
        var wakePending = false
    }

    private let queue = Mutex(Queue())
    private let wakePipe: WakePipe
    // Only on the loop thread.
    private var waits: [any UDPIOWait] = []

    private init() throws(TransportError) {
        wakePipe = try WakePipe()
    }

    /// Queues `job` for the loop thread, starting the thread if it is not running.
    func submit(_ job: @escaping @Sendable () -> Void) {
        let (start, wake) = queue.withLock { queue -> (Bool, Bool) in
            queue.jobs.append(job)
            return Self.claimThread(&queue)
        }
        kick(start: start, wake: wake)
    }

    /// Hands `wait` to the loop thread, which begins it and then watches its socket.
    func start(_ wait: any UDPIOWait) {
        let (start, wake) = queue.withLock { queue -> (Bool, Bool) in
            queue.starting.append(wait)
            return Self.claimThread(&queue)
        }
        kick(start: start, wake: wake)
    }

    /// Wakes the loop thread if it runs (a wait was cancelled: it looks at the flags again).
    func wake() {
        let wake = queue.withLock { queue -> Bool in
            guard queue.threadRunning, !queue.wakePending else { return false }
            queue.wakePending = true
            return true
        }
        kick(start: false, wake: wake)
    }

    /// Whether to start the thread, or else to wake it; with the queue locked.
    private static func claimThread(_ queue: inout Queue) -> (start: Bool, wake: Bool) {
        let start = !queue.threadRunning
        queue.threadRunning = true
        let wake = !start && !queue.wakePending
        if wake { queue.wakePending = true }
        return (start, wake)
    }

    private func kick(start: Bool, wake: Bool) {
        if start {
            // Without a thread (no resources left) the jobs stay queued, as they did with
            // Foundation's Thread, whose start failed the same way.
            OSThread.detach(name: "udp i/o") { [self] in self.loop() }
        } else if wake {
            wakePipe.raise()
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
        // Swapped with the queue's lists each turn, so both keep their storage.
        var jobs: [@Sendable () -> Void] = []
        var starting: [any UDPIOWait] = []
        var descriptors: [pollfd] = []
        while true {
            let stop = queue.withLock { queue -> Bool in
                queue.wakePending = false
                if queue.jobs.isEmpty && queue.starting.isEmpty && waits.isEmpty && idle {
                    queue.threadRunning = false
                    return true
                }
                swap(&queue.jobs, &jobs)
                swap(&queue.starting, &starting)
                return false
            }
            if stop { return }
            let hadWork = !jobs.isEmpty || !starting.isEmpty
            for job in jobs { job() }
            jobs.removeAll(keepingCapacity: true)
            for wait in starting where wait.begin() { waits.append(wait) }
            starting.removeAll(keepingCapacity: true)

            let now = ContinuousClock.now
            var first: ContinuousClock.Instant?
            descriptors.removeAll(keepingCapacity: true)
            var kept = 0
            for index in waits.indices {
                let wait = waits[index]
                if wait.isCancelled || wait.deadline <= now {
                    wait.expire()
                    continue
                }
                waits[kept] = wait
                kept += 1
                descriptors.append(pollfd(fd: wait.socket, events: Int16(POLLIN), revents: 0))
                if first.map({ wait.deadline < $0 }) ?? true { first = wait.deadline }
            }
            waits.removeLast(waits.count - kept)
            descriptors.append(pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0))
            let timeout: Int32
            if let first {
                // Rounded up, so the wait does not wake just before its deadline and spin.
                timeout = Int32(clamping: (now.duration(to: first) + .microseconds(999)).wholeMilliseconds)
            } else {
                timeout = hadWork ? 0 : Self.lingering
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            idle = ready == 0 && waits.isEmpty && !hadWork
            guard ready > 0 else { continue }
            if descriptors[descriptors.count - 1].revents != 0 { wakePipe.drain() }
            kept = 0
            for index in waits.indices {
                let wait = waits[index]
                if descriptors[index].revents != 0 && wait.readable() { continue }
                waits[kept] = wait
                kept += 1
            }
            waits.removeLast(waits.count - kept)
        }
    }
}
