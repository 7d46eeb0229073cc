#if canImport(Glibc)
    import Glibc
#endif

/// A non-blocking pipe whose read end a `poll` loop watches beside its sockets, so another
/// thread can wake the loop at once (new work, a cancellation) instead of on a timer. Both ends
/// are closed when the pipe is released.
public final class WakePipe: Sendable {
    /// The end the loop polls for `POLLIN`.
    public let readEnd: Int32
    private let writeEnd: Int32

    /// `pipe`, both ends close-on-exec and non-blocking (`fcntl`).
    public init() throws(TransportError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw TransportError(.system, "Could not create a wake-up pipe (errno \(errno)).")
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    /// Makes the read end readable (`write`; a full pipe is readable already).
    public func raise() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Empties the read end (`read` until it would block), after the loop woke.
    public func drain() {
        var buffer: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        while read(readEnd, &buffer, MemoryLayout.size(ofValue: buffer)) > 0 {}
    }

    deinit {
        Glibc.close(readEnd)
        Glibc.close(writeEnd)
    }
}
