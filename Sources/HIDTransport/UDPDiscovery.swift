import Logging
import Transport

/// Finds and opens CTAPHID-over-UDP devices (firmware emulators, the virtual authenticator).
///
/// UDP has no enumeration: ``devices()`` probes each configured endpoint with CTAPHID_INIT and
/// lists those that answer.
public struct UDPDiscovery: DeviceDiscovery {
    /// `udp`.
    public let scheme = "udp"
    /// The endpoints ``devices()`` probes.
    public var endpoints: [UDPEndpoint]
    /// How long a probe waits for the INIT answer.
    public var probeTimeout: Duration
    /// How long ``open(uri:)`` waits for the INIT answer.
    public var openTimeout: Duration
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

    /// The configured endpoints that answer CTAPHID_INIT.
    public func devices() async throws(TransportError) -> [DeviceDescriptor] {
        var found: [DeviceDescriptor] = []
        for endpoint in endpoints {
            do {
                let connection = try await open(endpoint: endpoint, timeout: probeTimeout)
                found.append(connection.descriptor)
                await connection.close()
            } catch {
                if error.code == .cancelled { throw error }
                logger.debug(
                    "No UDP device answers", metadata: ["uri": "\(endpoint.uri)", "error": "\(error)"])
            }
        }
        return found
    }

    /// Opens `udp:HOST:PORT[?local=PORT]`.
    public func open(uri: String) async throws(TransportError) -> any AuthenticatorConnection {
        try await open(endpoint: UDPEndpoint(uri: uri), timeout: openTimeout)
    }

    /// Opens an endpoint and allocates a CTAPHID channel.
    public func open(endpoint: UDPEndpoint, timeout: Duration) async throws(TransportError)
        -> CTAPHIDConnection
    {
        let pipe = try UDPReportPipe(endpoint: endpoint)
        let descriptor = DeviceDescriptor(uri: endpoint.uri, transport: .udp, product: "CTAPHID over UDP")
        return try await CTAPHIDConnection.open(
            pipe: pipe, descriptor: descriptor, timeout: timeout, logger: logger)
    }
}
