#if canImport(Glibc)
    import Glibc
#endif

/// A dual-stack UDP socket (IPv6 with `IPV6_V6ONLY` off, so IPv4 peers appear as v4-mapped
/// addresses): the one UDP socket type of the package, shared by the host's CTAPHID/UDP pipe and
/// the virtual key's UDP server.
///
/// Each method wraps one system call and turns its `errno` into a ``TransportError`` in that one
/// place (as swift-system's `valueOrErrno` does): a port in use is ``TransportError/Code/busy``,
/// an unreachable or refusing peer ``TransportError/Code/noDevice``, anything else
/// ``TransportError/Code/system`` with the call and `errno` in the message. The socket is a value
/// holding the descriptor; its owner closes it once, with ``close()``.
public struct UDPSocket: Sendable, Hashable {
    /// The file descriptor.
    public let descriptor: Int32

    /// Wraps a descriptor this process owns.
    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// `socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC)` with `IPV6_V6ONLY` off (`setsockopt`).
    public static func open() throws(TransportError) -> UDPSocket {
        let fd = Glibc.socket(AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw TransportError(.system, "Could not create a UDP socket (errno \(errno)).")
        }
        var off: Int32 = 0
        guard setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size)) == 0
        else {
            let code = errno
            Glibc.close(fd)
            throw TransportError(.system, "Could not make the UDP socket dual-stack (errno \(code)).")
        }
        return UDPSocket(descriptor: fd)
    }

    /// `close`.
    public func close() {
        _ = Glibc.close(descriptor)
    }

    /// `bind`; a port in use is ``TransportError/Code/busy``.
    public func bind(to address: UDPSocketAddress) throws(TransportError) {
        let rc = Self.withSockaddr(address.sockaddr) { Glibc.bind(descriptor, $0, $1) }
        guard rc == 0 else {
            let code = errno
            throw TransportError(
                code == EADDRINUSE ? .busy : .system,
                code == EADDRINUSE
                    ? "UDP port \(address.port) is in use (errno \(code))."
                    : "Could not bind UDP \(address) (errno \(code)).")
        }
    }

    /// `getsockname`: the port the socket is bound to (the one the kernel picked for port 0).
    public func boundPort() throws(TransportError) -> UInt16 {
        var raw = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let rc = withUnsafeMutablePointer(to: &raw) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard rc == 0 else {
            throw TransportError(.system, "Could not read the local UDP address (errno \(errno)).")
        }
        return UInt16(bigEndian: raw.sin6_port)
    }

    /// `connect`: only `peer` may send to the socket from now on, and a closed port at `peer`
    /// fails the next ``receive(into:)``. A peer the host has no route to is
    /// ``TransportError/Code/noDevice``.
    public func connect(to peer: UDPSocketAddress) throws(TransportError) {
        let rc = Self.withSockaddr(peer.sockaddr) { Glibc.connect(descriptor, $0, $1) }
        guard rc == 0 else {
            let code = errno
            if code == ENETUNREACH || code == EHOSTUNREACH || code == EADDRNOTAVAIL {
                throw TransportError(.noDevice, "UDP \(peer) cannot be reached from here (errno \(code)).")
            }
            throw TransportError(.system, "Could not aim the UDP socket at \(peer) (errno \(code)).")
        }
    }

    /// `sendto` (`send` on a connected socket when `peer` is nil): one whole datagram, again
    /// after `EINTR`. Blocks on a full socket buffer unless `dropIfFull`, which gives up on it
    /// (returns false) as a lossy link would. A refusing or unreachable peer is
    /// ``TransportError/Code/noDevice``.
    @discardableResult
    public func send(_ datagram: [UInt8], to peer: sockaddr_in6?, dropIfFull: Bool = false)
        throws(TransportError) -> Bool
    {
        let flags = dropIfFull ? Int32(MSG_DONTWAIT) : 0
        while true {
            let sent = datagram.withUnsafeBytes { bytes in
                guard let peer else { return Glibc.send(descriptor, bytes.baseAddress, bytes.count, flags) }
                return Self.withSockaddr(peer) {
                    sendto(descriptor, bytes.baseAddress, bytes.count, flags, $0, $1)
                }
            }
            if sent == datagram.count { return true }
            let code = errno
            if sent < 0 && code == EINTR { continue }
            if sent < 0 && dropIfFull && (code == EAGAIN || code == EWOULDBLOCK) { return false }
            if sent < 0 && (code == ECONNREFUSED || code == ENETUNREACH || code == EHOSTUNREACH) {
                let place = peer.map { "UDP \(UDPSocketAddress(ipv6: $0))" } ?? "the UDP peer"
                throw TransportError(.noDevice, "Nothing answers at \(place) (errno \(code)).")
            }
            throw TransportError(.system, "Could not send a UDP datagram (errno \(code)).")
        }
    }

    /// `recvfrom` without blocking: the datagram's length and source, or nil when the socket
    /// holds none. A datagram longer than `buffer` is cut to it; one from a source that is not a
    /// whole `sockaddr_in6` (never seen on a dual-stack socket) is dropped. On a connected socket,
    /// a closed port at the peer (an ICMP port unreachable) is ``TransportError/Code/noDevice``.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError)
        -> (count: Int, source: sockaddr_in6)?
    {
        while true {
            var source = sockaddr_in6()
            var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            let received = withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, &length)
                }
            }
            guard received >= 0 else {
                let code = errno
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { return nil }
                if code == ECONNREFUSED {
                    throw TransportError(
                        .noDevice, "Nothing answers at the UDP peer any more (errno \(code)).")
                }
                throw TransportError(.system, "Reading a UDP datagram failed (errno \(code)).")
            }
            guard Int(length) >= MemoryLayout<sockaddr_in6>.size, Int32(source.sin6_family) == AF_INET6 else {
                continue
            }
            return (min(received, buffer.count), source)
        }
    }

    /// `body` with `address` as the `sockaddr` pointer and length the socket calls take.
    private static func withSockaddr<R>(
        _ address: sockaddr_in6, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) -> R {
        var raw = address
        return withUnsafePointer(to: &raw) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    }
}
