#if canImport(Glibc)
    import Glibc
#endif
import Transport

/// CTAPHID reports carried one per UDP datagram, as firmware emulators do.
///
/// The socket's blocking calls run on the pipe's own ``BlockingIOThread``; reads wait in `poll` for at
/// most the slice asked for. Datagrams from any address but the device's are dropped.
public final class UDPReportPipe: CTAPHIDReportPipe, @unchecked Sendable {
    /// Always 64: the emulator convention.
    public let reportSize = 64
    /// The device address.
    public let endpoint: UDPEndpoint
    // Written only on `thread`.
    private var socket: Int32
    /// The receive buffer, used only on `thread` (a datagram over 2048 bytes is cut, and then
    /// refused by the CTAPHID assembler as the wrong report size).
    private var scratch = [UInt8](repeating: 0, count: 2048)
    private let peer: sockaddr_in
    private let thread: BlockingIOThread

    /// Binds the local port and aims the socket at the device.
    public init(endpoint: UDPEndpoint) throws(TransportError) {
        self.endpoint = endpoint
        peer = try Self.address(endpoint.host, endpoint.port)
        var local = try Self.address("0.0.0.0", endpoint.localPort)
        local.sin_addr = peer.sin_addr.s_addr == inet_addr("127.0.0.1") ? peer.sin_addr : local.sin_addr
        let fd = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw TransportError(.system, "Could not create a UDP socket (errno \(errno)).")
        }
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            Glibc.close(fd)
            if code == EADDRINUSE {
                throw TransportError(
                    .busy,
                    "Local UDP port \(endpoint.localPort) is in use; add ?local=0 to the URI to use any free port."
                )
            }
            throw TransportError(
                .system, "Could not bind local UDP port \(endpoint.localPort) (errno \(code)).")
        }
        socket = fd
        thread = BlockingIOThread(name: "udp \(endpoint.host):\(endpoint.port)")
    }

    deinit {
        if socket >= 0 { Glibc.close(socket) }
        thread.shutdown()
    }

    static func address(_ host: String, _ port: UInt16) throws(TransportError) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw TransportError(.invalidURI, "'\(host)' is not an IPv4 address.")
        }
        return address
    }

    /// Sends one report as one datagram (`sendto`).
    public func write(_ report: [UInt8]) async throws(TransportError) {
        try await write(reports: [report])
    }

    /// Sends each report as one datagram, in one trip to the socket's thread.
    public func write(reports: [[UInt8]]) async throws(TransportError) {
        try await thread.run(skipIfCancelled: false) { () throws(TransportError) in
            try self.send(reports)
        }
    }

    /// Waits up to `timeout` (`poll`) for one datagram from the device (`recvfrom`).
    public func read(timeout: Duration) async throws(TransportError) -> [UInt8]? {
        try await transfer(sending: [], readingFor: timeout, limit: 1, until: { _ in true }).first
    }

    /// Sends `reports`, then reads datagrams from the device until `complete` says the message
    /// is whole, `limit`, or `timeout`, in one trip to the socket's thread.
    public func transfer(
        sending reports: [[UInt8]], readingFor timeout: Duration, limit: Int,
        until complete: @escaping @Sendable ([UInt8]) -> Bool
    ) async throws(TransportError) -> [[UInt8]] {
        try await thread.run(skipIfCancelled: true) { () throws(TransportError) -> [[UInt8]] in
            try self.send(reports)
            let deadline = Deadline.after(timeout)
            var received: [[UInt8]] = []
            while received.count < limit, let report = try self.receive(deadline: deadline) {
                received.append(report)
                if complete(report) { break }
            }
            return received
        }
    }

    /// Sends each report as one datagram (`sendto`). Runs on the socket's thread.
    private func send(_ reports: [[UInt8]]) throws(TransportError) {
        let fd = socket
        guard fd >= 0 else { throw TransportError(.closed, "The UDP device connection was closed.") }
        var peer = self.peer
        for report in reports {
            let sent = report.withUnsafeBytes { bytes in
                withUnsafePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            guard sent == report.count else {
                throw TransportError(.system, "Could not send to the UDP device (errno \(errno)).")
            }
        }
    }

    /// One datagram from the device, waiting (`poll`) until `deadline`; nil when none came.
    /// Datagrams from other addresses are dropped. Runs on the socket's thread.
    private func receive(deadline: Deadline) throws(TransportError) -> [UInt8]? {
        let fd = socket
        guard fd >= 0 else { throw TransportError(.closed, "The UDP device connection was closed.") }
        while true {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, deadline.remaining.clampedMilliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw TransportError(.system, "Waiting for the UDP device failed (errno \(errno)).")
            }
            if ready == 0 { return nil }
            var source = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let received = scratch.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &source) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &length)
                    }
                }
            }
            if received < 0 {
                if errno == EINTR || errno == EAGAIN || errno == ECONNREFUSED { continue }
                throw TransportError(.system, "Reading from the UDP device failed (errno \(errno)).")
            }
            guard source.sin_addr.s_addr == peer.sin_addr.s_addr, source.sin_port == peer.sin_port else {
                // A flood from elsewhere must not keep this loop past its deadline.
                if deadline.hasPassed { return nil }
                continue
            }
            return Array(scratch.prefix(received))
        }
    }

    /// Closes the socket and ends the I/O thread.
    public func close() async {
        _ = try? await thread.run(skipIfCancelled: false) { () throws(TransportError) in
            if self.socket >= 0 {
                Glibc.close(self.socket)
                self.socket = -1
            }
        }
        thread.shutdown()
    }
}
