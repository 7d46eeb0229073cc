import _SecurityKeyInternals

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file a virtual key keeps its state in: read whole, written atomically (a temporary
/// file in the same directory, fsync, rename), owner-only (mode 0600).
struct VirtualKeyStateFile: Sendable {
    /// Refuse to read anything larger; a real state file is a few kilobytes per credential.
    static let maxSize = 16 << 20

    let path: String

    /// The file's bytes, or nil when it does not exist.
    func read() throws(VirtualKeyError) -> [UInt8]? {
        do { return try PrivateFile(path: path, maxSize: Self.maxSize).read() } catch { throw mapped(error) }
    }

    /// Replaces the file's content atomically; the old file stays intact if anything fails.
    func write(_ bytes: [UInt8]) throws(VirtualKeyError) {
        do { try PrivateFile(path: path, maxSize: Self.maxSize).write(bytes) } catch { throw mapped(error) }
    }

    /// A file that is not a regular file of a sensible size is foreign; the rest is I/O.
    private func mapped(_ failure: PrivateFile.Failure) -> VirtualKeyError {
        if failure.code == 0 {
            return VirtualKeyError(
                .stateFileForeign, "The state file \(path) is not a regular file of a virtual key state's size.")
        }
        return ioError(failure.operation, failure.code)
    }

    /// Takes the exclusive lock on the state file for as long as the returned value lives.
    ///
    /// The lock is an `flock(LOCK_EX)` on `PATH.lock`, not on the state file itself: writes
    /// replace the state file by rename, so a lock on its inode would not survive the first one.
    /// The kernel drops the lock when the holder exits, SIGKILL included, so no stale lock stays.
    func lock() throws(VirtualKeyError) -> VirtualKeyStateLock {
        let lockPath = path + ".lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ioError("create the lock file of", errno) }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let err = errno
            if err == EINTR { continue }
            close(fd)
            if err == EWOULDBLOCK {
                throw VirtualKeyError(
                    .stateFileInUse,
                    "The state file \(path) is in use by another virtual key (\(lockPath) is locked); "
                        + "stop that one first or use another state file.")
            }
            throw ioError("lock", err)
        }
        return VirtualKeyStateLock(fd: fd)
    }

    private func ioError(_ operation: String, _ code: Int32) -> VirtualKeyError {
        let reason = String(cString: strerror(code))
        return VirtualKeyError(.stateFileIO, "Cannot \(operation) the state file \(path): \(reason).")
    }
}

/// The held lock of a state file (see ``VirtualKeyStateFile/lock()``), released on deinit.
final class VirtualKeyStateLock: Sendable {
    private let fd: Int32

    fileprivate init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }
}
