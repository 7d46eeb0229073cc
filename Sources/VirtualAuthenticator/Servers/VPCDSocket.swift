#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Transport

/// A TCP connection to vpcd carrying its framing: a 2-byte big-endian length, then the payload.
/// Used only from the card server's ``BlockingIOThread``.
final class VPCDSocket: @unchecked Sendable {
    private var fd: Int32
    /// How long one poll() waits before looking at the cancellation flag again.
    private static let sliceMillis: Int32 = 100

    private init(fd: Int32) { self.fd = fd }

    /// A socket failure, with the system's reason when there is one.
    private static func failure(_ message: String, errno code: Int32? = nil) -> TransportError {
        let reason = code.map { " (\(String(cString: strerror($0))))" } ?? ""
        return TransportError(.system, "The vpcd connection failed: \(message)\(reason).")
    }

    deinit { if fd >= 0 { _ = Glibc.close(fd) } }

    /// Connects to vpcd at `host`:`port`, or throws.
    static func connect(host: String, port: UInt16) throws(TransportError) -> VPCDSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw Self.failure("cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        var lastErrno: Int32 = 0
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(
                info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { lastErrno = Glibc.errno; continue }
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                var one: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return VPCDSocket(fd: fd)
            }
            lastErrno = Glibc.errno
            _ = Glibc.close(fd)
        }
        throw Self.failure("cannot connect to vpcd at \(host):\(port)", errno: lastErrno)
    }

    func close() {
        if fd >= 0 { _ = Glibc.close(fd) }
        fd = -1
    }

    /// Reads one message; nil when vpcd closed the connection.
    func readMessage(cancel: CancellationSignal) throws(TransportError) -> [UInt8]? {
        guard let header = try read(count: 2, cancel: cancel, allowEOF: true) else { return nil }
        let length = Int(header[0]) << 8 | Int(header[1])
        if length == 0 { return [] }
        guard let payload = try read(count: length, cancel: cancel, allowEOF: false) else { return nil }
        return payload
    }

    /// Writes one message, length and payload in a single send so it leaves in one segment
    /// (two writes would meet the peer's delayed ACK and stall each APDU by ~40 ms).
    func writeMessage(_ payload: [UInt8]) throws(TransportError) {
        guard payload.count <= Int(UInt16.max) else {
            throw Self.failure("a vpcd message holds at most 65535 bytes")
        }
        let frame = [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
        var sent = 0
        while sent < frame.count {
            let n = frame.withUnsafeBytes { buffer in
                send(fd, buffer.baseAddress.map { $0 + sent }, frame.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                throw Self.failure("send to vpcd failed", errno: Glibc.errno)
            }
            sent += n
        }
    }

    private func read(count: Int, cancel: CancellationSignal, allowEOF: Bool) throws(TransportError) -> [UInt8]?
    {
        var buffer = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            if cancel.isCancelled { throw TransportError(.cancelled, "The operation was cancelled.") }
            // Acknowledge at once: vpcd waits for our reply before sending more, so a delayed
            // ACK only adds latency. Linux clears the flag after use, hence before every read.
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_QUICKACK, &one, socklen_t(MemoryLayout<Int32>.size))
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Self.sliceMillis)
            if ready < 0 {
                if Glibc.errno == EINTR { continue }
                throw Self.failure("poll on the vpcd socket failed", errno: Glibc.errno)
            }
            if ready == 0 { continue }
            let n = buffer.withUnsafeMutableBytes { raw in
                recv(fd, raw.baseAddress.map { $0 + got }, count - got, 0)
            }
            if n < 0 {
                if Glibc.errno == EINTR || Glibc.errno == EAGAIN { continue }
                throw Self.failure("receive from vpcd failed", errno: Glibc.errno)
            }
            if n == 0 {
                if got == 0 && allowEOF { return nil }
                throw Self.failure("vpcd closed the connection mid-message")
            }
            got += n
        }
        return buffer
    }
}
