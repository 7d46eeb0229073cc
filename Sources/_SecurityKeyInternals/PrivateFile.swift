#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small file only its owner may read (mode 0600 in a 0700 directory): read whole with a size
/// cap, replaced atomically (a temporary file beside it, fsync, rename, fsync of the directory).
/// For files that hold secrets, such as stored persistent PIN/UV tokens.
///
/// A writer killed before its rename (SIGKILL, power loss) leaves the old file intact and its
/// temporary file behind; the next write removes the temporary files of writers that are gone,
/// so secrets do not pile up beside the file.
public struct PrivateFile: Sendable {
    /// Why a read or write failed: the operation, the path and the C error.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What was attempted ("open", "write", ...).
        public var operation: String
        /// The file concerned.
        public var path: String
        /// The errno value, or 0 for a file that is not what it should be.
        public var code: Int32
        /// One sentence.
        public var description: String {
            let reason = code == 0 ? "not a regular file of a sensible size" : String(cString: strerror(code))
            return "Cannot \(operation) \(path): \(reason)."
        }
    }

    /// The file's path.
    public let path: String
    /// The largest content read.
    public let maxSize: Int

    /// A file at `path`, read only up to `maxSize` bytes.
    public init(path: String, maxSize: Int = 1 << 20) {
        self.path = path
        self.maxSize = maxSize
    }

    /// The file's bytes, or nil when it does not exist.
    public func read() throws(Failure) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw Failure(operation: "open", path: path, code: errno)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure(operation: "stat", path: path, code: errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG, info.st_size >= 0, info.st_size <= maxSize else {
            throw Failure(operation: "read", path: path, code: 0)
        }
        guard let bytes = FileIO.read(descriptor: fd, upTo: Int(info.st_size)) else {
            throw Failure(operation: "read", path: path, code: errno)
        }
        return bytes
    }

    /// Replaces the file's content atomically with mode 0600 (or `mode`, for a file other
    /// programs read, such as a metrics file node-exporter collects), with `createDirectory`
    /// creating its directory (0700) and missing parents first; the old file stays intact if
    /// anything fails.
    public func write(_ bytes: [UInt8], createDirectory: Bool = false, mode: mode_t = 0o600) throws(Failure) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        if createDirectory { try Self.makeDirectory(directory.isEmpty ? "/" : directory) }
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: .min ... .max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 0o600)
        guard fd >= 0 else { throw Failure(operation: "create", path: temporary, code: errno) }
        var ok = false
        defer { if !ok { unlink(temporary) } }
        do {
            defer { close(fd) }
            guard fchmod(fd, mode) == 0 else { throw Failure(operation: "chmod", path: temporary, code: errno) }
            guard FileIO.write(descriptor: fd, bytes) else {
                throw Failure(operation: "write", path: temporary, code: errno)
            }
            guard fsync(fd) == 0 else { throw Failure(operation: "fsync", path: temporary, code: errno) }
        }
        guard rename(temporary, path) == 0 else { throw Failure(operation: "rename", path: path, code: errno) }
        ok = true
        removeAbandonedTemporaries(in: directory.isEmpty ? "/" : directory)
        let dirfd = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
    }

    /// Unlinks the temporary files of this file (`NAME.tmp-PID-N`) whose writer process no
    /// longer exists; a live writer's, and anything not named so, are left alone.
    func removeAbandonedTemporaries(in directory: String) {
        let base = path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
        let prefix = base + ".tmp-"
        guard let stream = opendir(directory) else { return }
        defer { closedir(stream) }
        var abandoned: [String] = []
        // The name is read through the pointer, up to its NUL: `entry.pointee` would copy a whole
        // `struct dirent` (280 bytes), and readdir's record for a short name can end sooner, at
        // the end of its buffer's mapping (a crash seen in the test suite).
        guard let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) else { return }
        while let entry = readdir(stream) {
            let name = String(
                cString: UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self))
            guard name.hasPrefix(prefix) else { continue }
            let fields = name.dropFirst(prefix.count)
                .split(separator: "-", omittingEmptySubsequences: false)
            guard fields.count == 2, let pid = pid_t(fields[0]), pid > 0, UInt32(fields[1]) != nil else {
                continue
            }
            if kill(pid, 0) != 0 && errno == ESRCH { abandoned.append(name) }
        }
        for name in abandoned { unlink(directory + "/" + name) }
    }

    /// Removes the file; a missing file is not an error.
    public func remove() throws(Failure) {
        if unlink(path) != 0 && errno != ENOENT { throw Failure(operation: "remove", path: path, code: errno) }
    }

    /// Creates `directory` and its missing parents; new ones get mode 0700.
    static func makeDirectory(_ directory: String) throws(Failure) {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        if let slash = directory.lastIndex(of: "/"), slash != directory.startIndex {
            try makeDirectory(String(directory[..<slash]))
        }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw Failure(operation: "create the directory", path: directory, code: errno)
        }
    }
}
