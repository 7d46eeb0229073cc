#if canImport(Glibc)
    import Glibc
#endif

/// Bounded reads of files and whole writes to descriptors with `open`, `read` and `write`: what
/// Foundation's `FileHandle` did here, which is not in FoundationEssentials.
public enum FileIO {
    /// Standard input's descriptor.
    public static let standardInput: Int32 = 0
    /// Standard output's descriptor.
    public static let standardOutput: Int32 = 1
    /// Standard error's descriptor.
    public static let standardError: Int32 = 2

    /// At most `count` bytes of the file at `path` from its start; nil when it cannot be opened
    /// or read (a directory, no permission). Callers that cap a size ask for one byte more than
    /// the cap, to tell a file at the cap from a larger one.
    public static func read(path: String, upTo count: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return read(descriptor: fd, upTo: count)
    }

    /// At most `count` bytes from `fd`, read until that many or the end of input; nil on a
    /// read error.
    public static func read(descriptor fd: Int32, upTo count: Int) -> [UInt8]? {
        guard count > 0 else { return [] }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(count, 64 << 10))
        while bytes.count < count {
            let want = min(chunk.count, count - bytes.count)
            let got = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, want) }
            if got < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if got == 0 { break }
            bytes.append(contentsOf: chunk[0..<got])
        }
        return bytes
    }

    /// Writes `bytes` to the file at `path`, created (mode 0644 before the umask) or emptied
    /// first; nil when done, else the system's reason (`strerror`), for a message.
    public static func write(path: String, _ bytes: some Collection<UInt8>) -> String? {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        let written = write(descriptor: fd, bytes)
        let reason = written ? nil : String(cString: strerror(errno))
        guard close(fd) == 0 || reason != nil else { return String(cString: strerror(errno)) }
        return reason
    }

    /// Writes all of `bytes` to `fd` (retrying short writes and interrupted calls); false when
    /// the descriptor refused them (closed pipe, full disk), which callers writing to a
    /// terminal ignore as `FileHandle` did.
    @discardableResult
    public static func write(descriptor fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        let written = bytes.withContiguousStorageIfAvailable { buffer in writeAll(fd, UnsafeRawBufferPointer(buffer)) }
        if let written { return written }
        return Array(bytes).withUnsafeBytes { writeAll(fd, $0) }
    }

    /// Writes `text` as UTF-8 to `fd`.
    @discardableResult
    public static func write(descriptor fd: Int32, _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { writeAll(fd, UnsafeRawBufferPointer($0)) }
    }

    private static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < buffer.count {
            let done = Glibc.write(fd, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            if done < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += done
        }
        return true
    }
}
