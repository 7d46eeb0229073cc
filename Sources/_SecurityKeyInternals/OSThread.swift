#if canImport(Glibc)
    import Glibc
#endif

/// Plain POSIX threads and a condition variable, for the modules that start a helper thread or
/// wait with a time limit: what Foundation's `Thread` and `NSCondition` did, which are not in
/// FoundationEssentials (linking full Foundation brings its ICU data into every binary).
public enum OSThread {
    /// Runs `body` on a new detached thread named `name` (the kernel keeps 15 bytes, shown by
    /// `ps -L` and debuggers); false, with `body` not run, when no thread could be created.
    @discardableResult
    public static func detach(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let start = Start(name: name, body: body)
        let box = Unmanaged.passRetained(start).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { argument in
                guard let argument else { return nil }
                let start = Unmanaged<Start>.fromOpaque(argument).takeRetainedValue()
                OSThread.nameCurrent(start.name)
                start.body()
                return nil
            }, box)
        guard created == 0 else {
            Unmanaged<Start>.fromOpaque(box).release()
            return false
        }
        pthread_detach(thread)
        return true
    }

    /// Names the calling thread through `/proc/thread-self/comm` (Swift's Glibc does not export
    /// `pthread_setname_np`). Best effort.
    public static func nameCurrent(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = write(fd, bytes, bytes.count)
        close(fd)
    }

    private final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}

/// A mutex with a condition variable whose timed waits run on the monotonic clock (a wall-clock
/// step does not stretch or cut them). Callers guard their own state with ``lock()`` and
/// ``unlock()`` and sleep with ``wait(until:)``.
public final class ConditionLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    /// An unlocked lock.
    public init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// `pthread_mutex_lock`.
    public func lock() { pthread_mutex_lock(mutex) }

    /// `pthread_mutex_unlock`.
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Wakes every waiter (`pthread_cond_broadcast`); call it holding the lock.
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Sleeps, holding the lock again on return, until woken or until `deadline` (false: the
    /// time passed). Like every condition wait it may return early: callers loop on their state.
    public func wait(until deadline: ContinuousClock.Instant) -> Bool {
        let left = deadline - .now
        guard left > .zero else { return false }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = left.components
        var nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
        var whole = Int(now.tv_sec) + Int(clamping: seconds)
        if nanoseconds >= 1_000_000_000 {
            whole += 1
            nanoseconds -= 1_000_000_000
        }
        var until = timespec(tv_sec: whole, tv_nsec: nanoseconds)
        return pthread_cond_timedwait(condition, mutex, &until) == 0
    }
}
