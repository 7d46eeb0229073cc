#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// At file scope `read` and `write` name the C functions, not the methods below.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}

private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(fd, buffer, count)
}

/// The file a virtual key keeps its state in: read whole, written atomically (a temporary
/// file in the same directory, fsync, rename), owner-only (mode 0600).
struct VirtualKeyStateFile: Sendable {
    /// Refuse to read anything larger; a real state file is a few kilobytes per credential.
    static let maxSize = 16 << 20

    let path: String

    /// The file's bytes, or nil when it does not exist.
    func read() throws(VirtualKeyError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let err = errno
            if err == ENOENT { return nil }
            throw ioError("open", err)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ioError("stat", errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw VirtualKeyError(.stateFileForeign, "The state file \(path) is not a regular file.")
        }
        guard info.st_size >= 0, info.st_size <= Self.maxSize else {
            throw VirtualKeyError(
                .stateFileForeign, "The state file \(path) is too large to be a virtual key state.")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { buffer in
                systemRead(fd, buffer.baseAddress.map { $0 + done }, buffer.count - done)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw ioError("read", errno)
            }
            if n == 0 { break }
            done += n
        }
        return Array(bytes[0..<done])
    }

    /// Replaces the file's content atomically; the old file stays intact if anything fails.
    func write(_ bytes: [UInt8]) throws(VirtualKeyError) {
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: .min ... .max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ioError("create", errno) }
        var ok = false
        defer {
            if !ok { unlink(temporary) }
        }
        do {
            defer { close(fd) }
            guard fchmod(fd, 0o600) == 0 else { throw ioError("chmod", errno) }
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeBytes { buffer in
                    systemWrite(fd, buffer.baseAddress.map { $0 + done }, buffer.count - done)
                }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ioError("write", errno)
                }
                done += n
            }
            guard fsync(fd) == 0 else { throw ioError("fsync", errno) }
        }
        guard rename(temporary, path) == 0 else { throw ioError("rename", errno) }
        ok = true
        // Make the rename itself durable; failure here loses nothing already written.
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let dirfd = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
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
