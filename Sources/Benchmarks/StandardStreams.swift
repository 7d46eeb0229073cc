#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// Unbuffered writes to standard output and error, so a parent reading a pipe sees each line at once.
enum StandardStreams {
    /// Writes `text` and a newline to standard output.
    static func out(_ text: String) { write(text + "\n", to: 1) }
    /// Writes `text` and a newline to standard error.
    static func err(_ text: String) { write(text + "\n", to: 2) }

    private static func write(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer in
                Glibc.write(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// Lines of standard input, read on a thread of their own so no async task blocks in `read`.
    static func inputLines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let thread = Thread {
            while let line = readLine(strippingNewline: true) { continuation.yield(line) }
            continuation.finish()
        }
        thread.name = "stdin"
        thread.start()
        return stream
    }
}
