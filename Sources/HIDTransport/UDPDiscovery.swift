import Logging
import Synchronization
import Transport

/// Finds and opens CTAPHID-over-UDP devices (firmware emulators, the virtual authenticator).
///
/// UDP has no enumeration and no event source, so this is the one transport that probes:
/// ``devices()`` sends CTAPHID_INIT to each configured endpoint and lists those that answer,
/// and ``events()`` repeats that every ``probeInterval``.
public struct UDPDiscovery: DeviceDiscovery {
    /// `udp`.
    public let scheme = "udp"
    /// The endpoints ``devices()`` probes.
    public var endpoints: [UDPEndpoint]
    /// How long a probe waits for the INIT answer.
    public var probeTimeout: Duration
    /// How long ``open(uri:)`` waits for the INIT answer.
    public var openTimeout: Duration
    /// How long ``events()`` waits between rounds of probes.
    public var probeInterval: Duration = .seconds(1)
    private let logger: Logger

    /// Creates a discovery for `endpoints` (default: the emulator convention, 127.0.0.1:8111).
    public init(
        endpoints: [UDPEndpoint] = [UDPEndpoint()], probeTimeout: Duration = .milliseconds(300),
        openTimeout: Duration = CTAPHIDConnection.defaultOpenTimeout,
        logger: Logger = Logger(label: "securitykey.udp")
    ) {
        self.endpoints = endpoints
        self.probeTimeout = probeTimeout
        self.openTimeout = openTimeout
        self.logger = logger
    }

    /// The configured endpoints that answer CTAPHID_INIT, probed one after the other (emulators
    /// all answer to local port 7112, which one probe at a time can hold).
    public func devices() async throws(TransportError) -> [DeviceDescriptor] {
        var found: [DeviceDescriptor] = []
        for endpoint in endpoints {
            switch await probe(endpoint) {
            case .answered(let descriptor, _): found.append(descriptor)
            case .cancelled: throw TransportError(.cancelled, "The operation was cancelled.")
            case .absent, .unknown: break
            }
        }
        return found
    }

    /// The configured endpoints that answer when iteration starts, as
    /// ``DeviceEvent/arrived(_:)``; then, every ``probeInterval``, each endpoint is probed
    /// again: one that starts answering arrives, one that answered and now does not (no INIT
    /// answer, or its port is closed) is removed.
    ///
    /// Probes run in the consumer's task while it waits for the next event (no thread of its
    /// own), one endpoint at a time, each bounded by ``probeTimeout``. While another socket
    /// holds local port 7112, a probe of an endpoint without `?local=` falls back to a free port
    /// that emulators do not answer; a present endpoint is then reported removed only when its
    /// port is known to be closed. The stream ends when the consumer's task is cancelled, and at
    /// once when no endpoints are configured.
    public func events() -> AsyncStream<DeviceEvent> {
        let discovery = self
        let state = Mutex(ProbeRounds())
        return AsyncStream(unfolding: { () async -> DeviceEvent? in
            while true {
                let (next, started) = state.withLock { rounds in (rounds.queue.popFirst(), rounds.started) }
                if let next { return next }
                if discovery.endpoints.isEmpty || Task.isCancelled { return nil }
                if started {
                    do { try await Task.sleep(for: discovery.probeInterval) } catch { return nil }
                }
                for endpoint in discovery.endpoints {
                    let outcome = await discovery.probe(endpoint)
                    if case .cancelled = outcome { return nil }
                    state.withLock { $0.record(outcome, for: endpoint) }
                }
                state.withLock { $0.started = true }
            }
        })
    }

    /// What one probe learned.
    enum ProbeOutcome: Sendable {
        /// The endpoint answered CTAPHID_INIT; `toSender` when the probe came from a port
        /// other than 7112, so the device answers whoever asks (as our virtual keys do).
        case answered(DeviceDescriptor, toSender: Bool)
        /// Nothing answers there: no INIT answer on the port the device replies to, a closed
        /// port, or an unknown host.
        case absent
        /// No answer, but on a fallback local port an emulator would not reply to.
        case unknown
        /// The consumer's task was cancelled.
        case cancelled
    }

    /// Opens the endpoint, allocates a channel (CTAPHID_INIT) and closes it again.
    func probe(_ endpoint: UDPEndpoint) async -> ProbeOutcome {
        let deadline = Deadline.after(probeTimeout)
        var pipe: UDPReportPipe?
        do throws(TransportError) {
            let opened = try await UDPReportPipe.open(endpoint: endpoint, deadline: deadline)
            pipe = opened
            let connection = try await CTAPHIDConnection.open(
                pipe: opened, descriptor: endpoint.descriptor, timeout: deadline.remaining, logger: logger)
            await connection.close()
            return .answered(connection.descriptor, toSender: opened.localPort != UDPEndpoint.defaultLocalPort)
        } catch {
            logger.debug("No UDP device answers", metadata: ["uri": "\(endpoint.uri)", "error": "\(error)"])
            if error.code == .cancelled || Task.isCancelled { return .cancelled }
            if error.code == .timeout, let pipe, endpoint.localPort == nil,
                pipe.localPort != UDPEndpoint.defaultLocalPort
            {
                return .unknown
            }
            if error.code == .busy { return .unknown }
            return .absent
        }
    }

    /// Opens `udp:HOST:PORT[?local=PORT]`.
    public func open(uri: String) async throws(TransportError) -> any AuthenticatorConnection {
        try await open(endpoint: UDPEndpoint(uri: uri), timeout: openTimeout)
    }

    /// Opens `udp:HOST:PORT[?local=PORT]` within the open timeout or `deadline`, whichever
    /// comes first (a command's `--timeout` bounds CTAPHID_INIT too).
    public func open(uri: String, deadline: Deadline) async throws(TransportError) -> any AuthenticatorConnection {
        try await open(endpoint: UDPEndpoint(uri: uri), timeout: deadline.capped(at: openTimeout).remaining)
    }

    /// Opens an endpoint (looking up its host name) and allocates a CTAPHID channel, all within
    /// `timeout`.
    public func open(endpoint: UDPEndpoint, timeout: Duration) async throws(TransportError)
        -> CTAPHIDConnection
    {
        let deadline = Deadline.after(timeout)
        let pipe = try await UDPReportPipe.open(endpoint: endpoint, deadline: deadline)
        return try await CTAPHIDConnection.open(
            pipe: pipe, descriptor: endpoint.descriptor, timeout: deadline.remaining, logger: logger)
    }
}

/// The state of ``UDPDiscovery/events()``: which endpoints answered, and the events not yet taken.
struct ProbeRounds: Sendable {
    var present: [UDPEndpoint: DeviceDescriptor] = [:]
    /// Endpoints seen answering a probe from a fallback port: for them, silence on such a port
    /// means absence, not an emulator that only answers 7112.
    var answerSender: Set<UDPEndpoint> = []
    var queue: ArraySlice<DeviceEvent> = []
    var started = false

    /// Queues the arrival or removal a probe outcome means.
    mutating func record(_ outcome: UDPDiscovery.ProbeOutcome, for endpoint: UDPEndpoint) {
        switch outcome {
        case .answered(let descriptor, let toSender):
            if toSender { answerSender.insert(endpoint) }
            if present[endpoint] == nil {
                present[endpoint] = descriptor
                queue.append(.arrived(descriptor))
            }
        case .absent:
            if let gone = present.removeValue(forKey: endpoint) { queue.append(.removed(uri: gone.uri)) }
        case .unknown where answerSender.contains(endpoint):
            if let gone = present.removeValue(forKey: endpoint) { queue.append(.removed(uri: gone.uri)) }
        case .unknown, .cancelled:
            break
        }
    }
}
