#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
import Transport

/// CTAPHID reports carried one per UDP datagram, as firmware emulators do.
///
/// One dual-stack IPv6 socket (IPv4 peers as v4-mapped addresses). Socket calls run on the
/// process's one UDP I/O thread (``UDPIOLoop``), which waits on all pipes' sockets at once, so a
/// fleet of UDP keys costs one thread, not one per key; a host name is looked up on a thread of
/// its own first. A caller that works with one key can instead run its operations on the pipe's
/// own thread (``preferredTaskExecutor``, made when first asked for): there an exchange is sent,
/// waited for (`poll` on this socket alone) and received in place, on the calling thread, with
/// no trip to the loop thread and no wake-up of a pool thread on the way back. Datagrams from any address but the device's are dropped.
/// A name with several addresses (`localhost`: ::1 and 127.0.0.1) is sent the first reports on
/// each; the first address that answers becomes the only peer. With one peer the socket is
/// connected, so the kernel drops foreign datagrams too, and a closed device port (an ICMP port
/// unreachable) fails the next read with ``TransportError/Code/noDevice`` instead of a timeout.
public final class UDPReportPipe: CTAPHIDReportPipe, @unchecked Sendable {
    /// Always 64: the emulator convention.
    public let reportSize = 64
    /// The device address.
    public let endpoint: UDPEndpoint
    /// The local port the socket is bound to.
    public let localPort: UInt16
    // Written only on the loop's thread (or before the pipe is shared); nil once closed.
    fileprivate private(set) var socket: UDPSocket?
    // The device's addresses, one once it answered; written only on the loop's thread.
    private var peers: [UDPSocketAddress]
    // Whether the device ever answered (so a closed port means it went away, not that nothing
    // was ever there); written only on the loop's thread.
    private var answered = false
    /// The receive buffer, used only on the loop's thread (a datagram over 2048 bytes is cut,
    /// and then refused by the CTAPHID assembler as the wrong report size). Raw memory, not an
    /// array in a class property: each `inout` use of such a property costs a run-time
    /// exclusivity check and a uniqueness check per datagram.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    private let loop: UDPIOLoop
    // The pipe's own thread, once a caller asked for it (``preferredTaskExecutor``).
    private let ownThread = Mutex<BlockingIOThread?>(nil)
    // The wait every transfer uses unless another transfer holds it (then it makes its own).
    private lazy var ownWait = UDPTransferWait(pipe: self)
    private let ownWaitInUse = Atomic<Bool>(false)

    /// Binds the local port and aims the socket at the device, on the calling thread. Only for
    /// IPv4 and IPv6 literals, which need no lookup; ``open(endpoint:deadline:)`` takes names.
    public convenience init(endpoint: UDPEndpoint) throws(TransportError) {
        guard UDPEndpoint.isIPv4Literal(endpoint.host) || UDPEndpoint.isIPv6Literal(endpoint.host) else {
            throw TransportError(
                .invalidURI,
                "'\(endpoint.host)' is a host name; open the UDP endpoint asynchronously to look it up.")
        }
        let loop = try UDPIOLoop.shared.get()
        let socket = try Self.openSocket(endpoint: endpoint, deadline: .after(.seconds(1)))
        self.init(endpoint: endpoint, socket: socket, loop: loop)
    }

    private init(endpoint: UDPEndpoint, socket: OpenedSocket, loop: UDPIOLoop) {
        self.endpoint = endpoint
        self.socket = socket.socket
        self.peers = socket.peers
        self.localPort = socket.localPort
        self.loop = loop
    }

    /// Resolves the host (`getaddrinfo`, until `deadline`, on a thread of its own), binds the
    /// local port and aims the socket at the device. An IPv4 or IPv6 literal needs no lookup:
    /// its socket calls (`socket`, `bind`, `connect` on a datagram socket) do not block.
    public static func open(endpoint: UDPEndpoint, deadline: Deadline) async throws(TransportError)
        -> UDPReportPipe
    {
        let loop = try UDPIOLoop.shared.get()
        if UDPEndpoint.isIPv4Literal(endpoint.host) || UDPEndpoint.isIPv6Literal(endpoint.host) {
            if Task.isCancelled { throw TransportError(.cancelled, "The operation was cancelled.") }
            let socket = try openSocket(endpoint: endpoint, deadline: deadline)
            return UDPReportPipe(endpoint: endpoint, socket: socket, loop: loop)
        }
        let thread = BlockingIOThread(name: "udp \(endpoint.uriHost):\(endpoint.port)")
        defer { thread.shutdown() }
        let socket = try await thread.run(skipIfCancelled: true) { () throws(TransportError) in
            try openSocket(endpoint: endpoint, deadline: deadline)
        }
        return UDPReportPipe(endpoint: endpoint, socket: socket, loop: loop)
    }

    deinit {
        socket?.close()
        scratch.deallocate()
        ownThread.withLock { $0 }?.shutdown()
    }

    /// The pipe's own thread, started the first time a caller asks: a task that runs there
    /// (`withTaskExecutorPreference`) has every exchange of this pipe done in place (send, `poll`
    /// on this socket alone, receive) instead of through the shared loop thread. Blocking calls
    /// then block only this thread, never the cooperative pool. Pipes nobody asks this of (a
    /// fleet) start no thread.
    public var preferredTaskExecutor: (any TaskExecutor)? {
        ownThread.withLock { thread in
            if let thread { return thread }
            let started = BlockingIOThread(
                name: "udp \(endpoint.uriHost):\(endpoint.port)",
                closedMessage: "The UDP device connection was closed.")
            thread = started
            return started
        }
    }

    /// Sends one report as one datagram (`sendto`).
    public func write(_ report: [UInt8]) async throws(TransportError) {
        try await write(reports: [report])
    }

    /// Sends each report as one datagram, in one trip to the I/O thread.
    public func write(reports: [[UInt8]]) async throws(TransportError) {
        try await loop.run { () throws(TransportError) in try self.send(reports) }
    }

    /// Waits up to `timeout` (`poll`) for one datagram from the device (`recvfrom`).
    public func read(timeout: Duration) async throws(TransportError) -> [UInt8]? {
        try await transfer(sending: [], readingFor: timeout, limit: 1, until: { _ in true }).first
    }

    /// Sends `reports`, then reads datagrams from the device until `complete` says the message
    /// is whole, `limit`, or `timeout`, in one trip to the I/O thread, which waits on this
    /// socket along with every other pipe's. Each report becomes an array here; the CTAPHID
    /// connection uses ``transfer(sending:readingFor:limit:accepting:)``, which makes none.
    nonisolated(nonsending) public func transfer(
        sending reports: [[UInt8]], readingFor timeout: Duration, limit: Int,
        until complete: @escaping @Sendable ([UInt8]) -> Bool
    ) async throws(TransportError) -> [[UInt8]] {
        let collected = CollectedReports()
        _ = try await transfer(
            sending: reports, readingFor: timeout, limit: limit,
            accepting: { bytes in
                let report = Array(bytes)
                collected.reports.append(report)
                return complete(report)
            })
        return collected.reports
    }

    /// Sends `reports`, then hands each datagram from the device to `accept`, in the receive
    /// buffer, until `accept` says the message is whole, `limit`, or `timeout`; in one trip to
    /// the I/O thread, which waits on this socket along with every other pipe's. The pipe's own
    /// wait record is reused, so the trip allocates nothing of its own (a second transfer at
    /// the same time gets a fresh one), and no report is copied into an array.
    nonisolated(nonsending) public func transfer(
        sending reports: [[UInt8]], readingFor timeout: Duration, limit: Int,
        accepting accept: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool
    ) async throws(TransportError) -> Int {
        if let thread = ownThread.withLock({ $0 }), thread.isCurrent {
            return try transferInPlace(sending: reports, readingFor: timeout, limit: limit, accepting: accept)
        }
        let owned = ownWaitInUse.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        let wait = owned ? ownWait : UDPTransferWait(pipe: self)
        defer { if owned { ownWaitInUse.store(false, ordering: .releasing) } }
        wait.prepare(sending: reports, deadline: .now + timeout, limit: limit, accepting: accept)
        let loop = self.loop
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                wait.continuation = continuation
                loop.start(wait)
            }
        } onCancel: {
            wait.cancelled.store(true, ordering: .releasing)
            loop.wake()
        }
        return try wait.takeResult().get()
    }

    /// ``transfer(sending:readingFor:limit:accepting:)`` on the pipe's own thread, where its
    /// caller runs: sends, then receives what is queued and waits in `poll` on this socket alone,
    /// until `accept` says the message is whole, `limit`, `timeout` or cancellation (seen before
    /// each wait; the CTAPHID connection asks for slices of at most 100 ms). The connection runs
    /// one exchange at a time and closes the pipe only between them, so nothing runs on the
    /// socket on the loop thread meanwhile.
    private func transferInPlace(
        sending reports: [[UInt8]], readingFor timeout: Duration, limit: Int,
        accepting accept: (UnsafeRawBufferPointer) -> Bool
    ) throws(TransportError) -> Int {
        if Task.isCancelled { throw TransportError(.cancelled, "The operation was cancelled.") }
        try send(reports)
        let deadline = ContinuousClock.now + timeout
        var count = 0
        while count < limit {
            if let report = try receive() {
                count += 1
                if accept(report) { break }
                continue
            }
            guard let descriptor = socket?.descriptor else { break }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero, !Task.isCancelled else { break }
            var watched = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            // Rounded up, as the loop does, so the wait does not wake just before the deadline.
            let ready = poll(&watched, 1, Int32(clamping: (remaining + .microseconds(999)).wholeMilliseconds))
            if ready == 0 || (ready < 0 && errno != EINTR) { break }
        }
        return count
    }

    /// Sends each report as one datagram to the device (to each of its addresses until one
    /// answered). Runs on the I/O thread, or on the pipe's own thread in place.
    fileprivate func send(_ reports: [[UInt8]]) throws(TransportError) {
        guard let socket else { throw TransportError(.closed, "The UDP device connection was closed.") }
        for report in reports {
            var delivered = false
            var failure: TransportError?
            for peer in peers {
                do throws(TransportError) {
                    // Connected to its one peer, the socket sends without naming it.
                    try socket.send(report, to: peers.count == 1 ? nil : peer.sockaddr)
                    delivered = true
                } catch {
                    failure = TransportError(error.code, "\(endpoint.uri): \(error.message)", underlying: error)
                }
            }
            if !delivered, let failure { throw failure }
        }
    }

    /// One datagram from the device if the socket holds one, without waiting, in the receive
    /// buffer (valid until the next call); nil when it holds none. Datagrams from other
    /// addresses are dropped. Runs on the I/O thread, or on the pipe's own thread in place.
    fileprivate func receive() throws(TransportError) -> UnsafeRawBufferPointer? {
        guard let socket else { throw TransportError(.closed, "The UDP device connection was closed.") }
        // Read once: each read of a class property is a run-time exclusivity check.
        let peers = self.peers
        let connected = peers.count == 1
        // A flood from elsewhere must not hold the I/O thread, which every pipe shares: after a
        // bounded number of foreign datagrams the wait goes back to `poll` and its deadline.
        for _ in 0..<Self.foreignDatagramsPerWake {
            let datagram: (count: Int, source: sockaddr_in6)?
            do throws(TransportError) {
                datagram = try socket.receive(into: scratch)
            } catch where error.code == .noDevice {
                // Unconnected sockets never see this; a connected one learned of an ICMP port
                // unreachable: nothing listens at the device's address any more.
                guard connected else { return nil }
                throw TransportError(
                    .noDevice,
                    answered
                        ? "Nothing answers at \(endpoint.uri) any more; the device is gone."
                        : "Nothing answers at \(endpoint.uri): no CTAPHID device listens on that UDP port.")
            }
            guard let (count, source) = datagram else { return nil }
            // Compared with the C address as received: building a `UDPSocketAddress` (an array)
            // for every datagram cost an allocation per report.
            guard let peer = peers.first(where: { $0.matches(source) }) else { continue }
            if !connected {
                // The first address that answers is the device; aim only there from now on.
                self.peers = [peer]
                try Self.connect(socket, to: peer, endpoint: endpoint)
            }
            answered = true
            return UnsafeRawBufferPointer(rebasing: scratch[..<count])
        }
        return nil
    }

    /// How many datagrams from other addresses one wake-up of a wait drops before it waits again.
    static let foreignDatagramsPerWake = 64

    /// Closes the socket, on the I/O thread, after ending any wait on it; then lets the pipe's
    /// own thread, if it has one, end once its queued jobs are done.
    public func close() async {
        _ = try? await loop.run { () throws(TransportError) in
            if let socket = self.socket {
                self.loop.expireWaits(on: socket.descriptor)
                socket.close()
                self.socket = nil
            }
        }
        ownThread.withLock { $0 }?.shutdown()
    }
}

/// One transfer of a ``UDPReportPipe`` through the shared loop: what it sends, what it has read,
/// and the caller to resume. The caller fills it in before it starts the wait and reads the
/// result after it was resumed; between the two only the loop thread touches it.
final class UDPTransferWait: UDPIOWait, @unchecked Sendable {
    // The pipe outlives every transfer it runs, and a wait is in the loop only during one.
    private unowned(unsafe) let pipe: UDPReportPipe
    private var reports: [[UInt8]] = []
    private var limit = 0
    private var accept: (@Sendable (UnsafeRawBufferPointer) -> Bool)?
    private var count = 0
    private var result: Result<Int, TransportError> = .success(0)
    /// The caller, set before the wait is started.
    var continuation: UnsafeContinuation<Void, Never>?
    /// Set by the caller's cancellation handler.
    let cancelled = Atomic<Bool>(false)
    private(set) var deadline: ContinuousClock.Instant = .now
    private(set) var socket: Int32 = -1

    init(pipe: UDPReportPipe) {
        self.pipe = pipe
    }

    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Readies the wait for one transfer; before it is started.
    func prepare(
        sending reports: [[UInt8]], deadline: ContinuousClock.Instant, limit: Int,
        accepting accept: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool
    ) {
        self.reports = reports
        self.deadline = deadline
        self.limit = limit
        self.accept = accept
        cancelled.store(false, ordering: .relaxed)
    }

    /// How many reports the transfer read, or its failure, once resumed; leaves the wait empty
    /// for the next one.
    func takeResult() -> Result<Int, TransportError> {
        defer {
            result = .success(0)
            accept = nil
        }
        return result
    }

    func begin() -> Bool {
        if isCancelled {
            finish(.failure(TransportError(.cancelled, "The operation was cancelled.")))
            return false
        }
        let reports = self.reports
        self.reports = []
        do throws(TransportError) {
            try pipe.send(reports)
        } catch {
            finish(.failure(error))
            return false
        }
        socket = pipe.socket?.descriptor ?? -1
        return true
    }

    func readable() -> Bool {
        // Read into locals once: each use of a class property is a run-time exclusivity check,
        // and this runs per datagram.
        var count = self.count
        let accept = self.accept
        let limit = self.limit
        do throws(TransportError) {
            while count < limit, let report = try pipe.receive() {
                count += 1
                if accept?(report) ?? true {
                    finish(.success(count))
                    return true
                }
            }
            guard count >= limit else {
                self.count = count
                return false
            }
            finish(.success(count))
        } catch {
            finish(.failure(error))
        }
        return true
    }

    func expire() {
        finish(.success(count))
    }

    private func finish(_ outcome: Result<Int, TransportError>) {
        result = outcome
        count = 0
        let continuation = self.continuation
        self.continuation = nil
        continuation?.resume()
    }
}

/// The reports an array-returning transfer collects; written on the I/O thread, read by the
/// caller after it was resumed.
private final class CollectedReports: @unchecked Sendable {
    var reports: [[UInt8]] = []
}

extension UDPSocketAddress {
    /// Whether a datagram from `source` comes from this address (the scope counts only when
    /// this address has one).
    func matches(_ source: UDPSocketAddress) -> Bool {
        address == source.address && port == source.port && (scope == 0 || scope == source.scope)
    }

    /// ``matches(_:)`` for a source as `recvfrom` gave it, without converting it first.
    func matches(_ source: sockaddr_in6) -> Bool {
        guard port == UInt16(bigEndian: source.sin6_port), scope == 0 || scope == source.sin6_scope_id,
            address.count == 16
        else { return false }
        return withUnsafeBytes(of: source.sin6_addr) { bytes in
            address.withUnsafeBytes { own in
                guard let theirs = bytes.baseAddress, let ours = own.baseAddress else { return false }
                return memcmp(theirs, ours, 16) == 0
            }
        }
    }
}

extension UDPReportPipe {
    /// A socket the pipe opened, the device's addresses and the local port.
    fileprivate struct OpenedSocket: Sendable {
        var socket: UDPSocket
        var peers: [UDPSocketAddress]
        var localPort: UInt16
    }

    /// Resolves the device, opens the dual-stack socket, binds the local port (the preferred
    /// 7112 falling back to any free port, unless the endpoint forces one) and, with one
    /// address, connects it. No `SO_REUSEADDR`/`SO_REUSEPORT`: two processes never share a port.
    fileprivate static func openSocket(endpoint: UDPEndpoint, deadline: Deadline) throws(TransportError)
        -> OpenedSocket
    {
        let peers = try UDPResolver.resolve(host: endpoint.host, port: endpoint.port, deadline: deadline)
        // Listen on loopback only when the device is there, so the port is not open to the network.
        let local: UDPSocketAddress
        if peers.allSatisfy({ $0.isLoopback && $0.isMappedIPv4 }) {
            local = .ipv4Loopback
        } else if peers.allSatisfy({ $0.isLoopback && !$0.isMappedIPv4 }) {
            local = .ipv6Loopback
        } else {
            local = .any
        }
        let socket = try UDPSocket.open()
        do throws(TransportError) {
            let port: UInt16
            if let forced = endpoint.localPort {
                do throws(TransportError) {
                    try socket.bind(to: local.with(port: forced))
                } catch where error.code == .busy {
                    throw TransportError(
                        .busy, "Local UDP port \(forced) is in use; add ?local=0 to the URI to use any free port.",
                        underlying: error)
                }
                port = forced
            } else {
                do throws(TransportError) {
                    try socket.bind(to: local.with(port: UDPEndpoint.defaultLocalPort))
                    port = UDPEndpoint.defaultLocalPort
                } catch where error.code == .busy {
                    // Another host process has 7112: keys that answer the sender still work.
                    try socket.bind(to: local.with(port: 0))
                    port = 0
                }
            }
            let bound = port == 0 ? try socket.boundPort() : port
            if peers.count == 1 { try connect(socket, to: peers[0], endpoint: endpoint) }
            return OpenedSocket(socket: socket, peers: peers, localPort: bound)
        } catch {
            socket.close()
            throw error
        }
    }

    /// Aims `socket` at `peer` only, with the endpoint's URI in the error.
    fileprivate static func connect(_ socket: UDPSocket, to peer: UDPSocketAddress, endpoint: UDPEndpoint)
        throws(TransportError)
    {
        do throws(TransportError) {
            try socket.connect(to: peer)
        } catch {
            throw TransportError(error.code, "\(endpoint.uri): \(error.message)", underlying: error)
        }
    }
}
