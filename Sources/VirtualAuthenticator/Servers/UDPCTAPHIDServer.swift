#if canImport(Glibc)
    import Glibc
#endif
import CTAPHID
import Logging
import Synchronization
import Transport

/// Serves a ``CTAPMessageHandler`` as a CTAPHID device over UDP, one 64-byte report per
/// datagram, the convention of firmware emulators (CTAP 2.1 §11.2 framing).
///
/// It listens on 127.0.0.1:8111 by default and answers each report to the address it came from,
/// so many servers and hosts can run at once; ``Configuration/replyPort`` pins the reply port
/// instead (emulator hosts listen on 7112). Blocking socket calls run on a thread of their own
/// while the server runs; ``run()`` (or ``serve(_:)`` for many servers on one thread) is owned by
/// the caller and returns when its task is cancelled.
public final class UDPCTAPHIDServer: Sendable {
    /// How the server listens and what it reports in CTAPHID_INIT.
    public struct Configuration: Sendable {
        /// The address to listen on: IPv4 (`127.0.0.1`) or IPv6 (`::1`; `::` takes both families).
        public var host: String
        /// The UDP port to listen on (0 = any free port; see ``UDPCTAPHIDServer/port``).
        public var port: UInt16
        /// When set, replies go to this port on the sender's host instead of the sender's port.
        public var replyPort: UInt16?
        /// Capability flags announced in CTAPHID_INIT.
        public var capabilities: CTAPHIDCapabilities
        /// Device version announced in CTAPHID_INIT (major, minor, build).
        public var deviceVersion: (major: UInt8, minor: UInt8, build: UInt8)
        /// How long a host may pause inside one message before ERR_MSG_TIMEOUT.
        public var messageTimeout: Duration
        /// How often KEEPALIVE is sent while a request is processed.
        public var keepaliveInterval: Duration
        /// A misbehaviour to show on purpose (``VirtualKeyFault/silentAfterInit``); nil for none.
        public var fault: VirtualKeyFault?

        /// The emulator convention: listen on 127.0.0.1:8111, answer to the sender.
        public init(
            host: String = "127.0.0.1", port: UInt16 = 8111, replyPort: UInt16? = nil,
            capabilities: CTAPHIDCapabilities = [.wink, .cbor],
            deviceVersion: (major: UInt8, minor: UInt8, build: UInt8) = (1, 0, 0),
            messageTimeout: Duration = .milliseconds(500), keepaliveInterval: Duration = .milliseconds(100)
        ) {
            self.host = host
            self.port = port
            self.replyPort = replyPort
            self.capabilities = capabilities
            self.deviceVersion = deviceVersion
            self.messageTimeout = messageTimeout
            self.keepaliveInterval = keepaliveInterval
        }
    }

    /// The port the server listens on.
    public let port: UInt16
    fileprivate let socket: UDPSocket
    // One IPv6 socket for both families: IPv4 peers appear as v4-mapped addresses.
    fileprivate let engine: CTAPHIDServerEngine<sockaddr_in6>
    private let logger: Logger
    /// Until when the key is "out of its port": datagrams are dropped unanswered.
    private let unpluggedUntil = Mutex<ContinuousClock.Instant?>(nil)

    /// How long one receive waits, while a host is in the middle of a message, before the server
    /// checks for a stalled one (ERR_MSG_TIMEOUT); otherwise it waits until a datagram comes or
    /// its task is cancelled, so idle keys cost no CPU.
    static let receiveSlice: Int32 = 100

    /// Binds the socket; call ``run()`` to serve.
    public init(
        handler: any CTAPMessageHandler, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "securitykey.virtual.udp")
    ) throws(TransportError) {
        guard let address = UDPSocketAddress(numericHost: configuration.host, port: configuration.port) else {
            throw TransportError(.invalidURI, "'\(configuration.host)' is not an IPv4 or IPv6 address.")
        }
        let socket = try UDPSocket.open()
        do throws(TransportError) {
            try socket.bind(to: address)
            port = try socket.boundPort()
        } catch {
            socket.close()
            throw TransportError(
                error.code, "Could not listen on UDP \(configuration.host):\(configuration.port): \(error.message)",
                underlying: error)
        }
        self.socket = socket
        self.logger = logger
        let info = CTAPHIDInitResponse(
            nonce: [], channel: 0, majorVersion: configuration.deviceVersion.major,
            minorVersion: configuration.deviceVersion.minor, buildVersion: configuration.deviceVersion.build,
            capabilities: configuration.capabilities)
        let replyPort = configuration.replyPort
        engine = CTAPHIDServerEngine(
            handler: handler,
            device: CTAPHIDDeviceState(deviceInfo: info, messageTimeout: configuration.messageTimeout),
            keepaliveInterval: configuration.keepaliveInterval, fault: configuration.fault, logger: logger
        ) { report, peer in
            var destination = peer
            if let replyPort { destination.sin6_port = replyPort.bigEndian }
            // A full socket buffer drops the report, as a lossy link would; a host that went
            // away is not the server's failure.
            _ = try? socket.send(report, to: destination, dropIfFull: true)
        }
    }

    deinit {
        socket.close()
    }

    /// Serves until the calling task is cancelled.
    public func run() async throws(TransportError) {
        try await Self.serve([self])
    }

    /// Serves every one of `servers` until the calling task is cancelled, from one I/O thread
    /// that waits (`poll`) on all their sockets at once: a process serving many keys costs one
    /// thread and one wake-up per batch of datagrams, not one thread per key.
    public static func serve(_ servers: [UDPCTAPHIDServer]) async throws(TransportError) {
        guard let first = servers.first else { return }
        for server in servers {
            server.logger.info("CTAPHID over UDP listening", metadata: ["port": "\(server.port)"])
        }
        let wake = try WakePipe()
        let thread = BlockingIOThread(
            name: servers.count == 1 ? "udp ctaphid :\(first.port)" : "udp ctaphid x\(servers.count)",
            closedMessage: "The server was closed.")
        defer { thread.shutdown() }
        let sockets = servers.map(\.socket)
        let outcome: TransportError? = await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                // Only a message in the middle of arriving needs a timer (ERR_MSG_TIMEOUT).
                let slice = servers.contains { $0.engine.isAssembling } ? receiveSlice : -1
                let received: [Datagram]
                do throws(TransportError) {
                    received = try await thread.run(
                        skipIfCancelled: true,
                        { () throws(TransportError) in
                            try receive(sockets, wake: wake.readEnd, timeout: slice)
                        },
                        onCancel: { wake.raise() })
                } catch {
                    if error.code == .cancelled { break }
                    group.cancelAll()
                    return error
                }
                for datagram in received {
                    let server = servers[datagram.index]
                    if !server.isUnplugged {
                        server.engine.receive(datagram.report, from: datagram.peer, in: &group)
                    }
                }
                for server in servers { server.engine.expire() }
            }
            group.cancelAll()
            return nil
        }
        if let outcome { throw outcome }
    }

    /// Stops answering for `duration`, as a key pulled out of its port and put back would:
    /// hosts see it go away (their probes time out) and come back. UDP has no other way to
    /// show a re-insertion.
    public func unplug(for duration: Duration) {
        unpluggedUntil.withLock { $0 = .now + duration }
    }

    /// Whether the key is out of its port now.
    private var isUnplugged: Bool {
        unpluggedUntil.withLock { until in
            guard let end = until else { return false }
            if ContinuousClock.now < end { return true }
            until = nil
            return false
        }
    }

    /// One datagram from one of the served sockets.
    fileprivate struct Datagram: Sendable {
        var index: Int
        var report: [UInt8]
        var peer: sockaddr_in6
    }

    /// The most datagrams taken from one socket per wake-up, so a flooded key cannot starve
    /// the others.
    static let batchPerSocket = 16

    /// Waits (`poll`) up to `timeout` ms (-1: no limit) until a socket has a datagram or `wake`
    /// is raised, then takes what the ready sockets hold (`recvfrom`). Runs on the I/O thread.
    fileprivate static func receive(_ sockets: [UDPSocket], wake: Int32, timeout: Int32) throws(TransportError)
        -> [Datagram]
    {
        var descriptors = sockets.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        descriptors.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0))
        let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
        if ready < 0 {
            if errno == EINTR { return [] }
            throw TransportError(.system, "Waiting on the UDP sockets failed (errno \(errno)).")
        }
        guard ready > 0 else { return [] }
        var received: [Datagram] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        for (index, descriptor) in descriptors.dropLast().enumerated() where descriptor.revents != 0 {
            for _ in 0..<batchPerSocket {
                guard let (report, peer) = try receiveOne(sockets[index], buffer: &buffer) else { break }
                received.append(Datagram(index: index, report: report, peer: peer))
            }
        }
        return received
    }

    /// One datagram (``UDPSocket/receive(into:)``), or nil when the socket holds none.
    private static func receiveOne(_ socket: UDPSocket, buffer: inout [UInt8]) throws(TransportError)
        -> (report: [UInt8], peer: sockaddr_in6)?
    {
        while true {
            do throws(TransportError) {
                let datagram = try buffer.withUnsafeMutableBytes { bytes in
                    Result { () throws(TransportError) in try socket.receive(into: bytes) }
                }.get()
                guard let (count, peer) = datagram else { return nil }
                return (Array(buffer.prefix(count)), peer)
            } catch where error.code == .noDevice {
                // An ICMP port unreachable left by a host that went away: not ours to report.
                continue
            }
        }
    }
}
