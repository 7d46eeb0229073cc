#if canImport(Glibc)
    import Glibc
#endif
import _SecurityKeyInternals
import CBOR
import Logging
import Transport

/// Where a ``VirtualKeyServer`` serves its keys.
public enum VirtualKeyTransport: Sendable, Hashable {
    /// CTAPHID over UDP, listening at `host:port` (port 0: any free port), as firmware emulators do.
    case udp(host: String, port: UInt16)
    /// A contactless card connected to vsmartcard's vpcd at `host:port`, so pcscd and every
    /// PC/SC client see it.
    case pcsc(vpcdHost: String, vpcdPort: UInt16)
    /// A USB FIDO key through the kernel's /dev/uhid (Linux), with this USB serial number.
    case uhid(serialNumber: String)

    /// Whether `text` can be a uhid device's serial number: 1 to 63 ASCII characters, no newline
    /// or `=` (the kernel's `uniq` field, which udev prints as `KEY=value` lines).
    public static func isValidSerialNumber(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count < 64 && text.allSatisfy { $0.isASCII && !$0.isNewline && $0 != "=" }
    }

    /// `HOST:PORT` of vpcd for a PC/SC card (empty for the other transports).
    public var vpcdAddress: String {
        guard case .pcsc(let host, let port) = self else { return "" }
        return "\(host):\(port)"
    }
}

/// One served key's readiness document: what a host needs to reach it, once it serves
/// (`securitykey virtual serve --json` prints ``json`` as one line per key).
public struct VirtualKeyReadiness: Sendable, Hashable {
    /// `udp`, `pcsc` or `uhid`.
    public var transport: String
    /// The device URI hosts open (`udp:HOST:PORT`, `hid:/dev/hidrawN`); nil for a vpcd card.
    public var uri: String?
    /// Where the card's vpcd listens (`HOST:PORT`); nil for the other transports.
    public var vpcd: String?
    /// The key's AAGUID in UUID form.
    public var aaguid: String
    /// The state file, if the key keeps one.
    public var stateFile: String?
    /// The serving process.
    public var processID: Int32

    /// Where the key is served, as a phrase ("over CTAPHID/UDP at udp:127.0.0.1:8111").
    public var location: String {
        switch transport {
        case "udp": "over CTAPHID/UDP at \(uri ?? "")"
        case "uhid": "through uhid as \(uri ?? "")"
        default: "to vpcd at \(vpcd ?? "")"
        }
    }

    /// The document: `transport`, `uri` (or `vpcd`), `aaguid`, `state` (null without one), `pid`.
    public var json: JSONValue {
        let place: (String, JSONValue?) = uri.map { ("uri", .string($0)) } ?? ("vpcd", .string(vpcd ?? ""))
        return .members([
            ("transport", .string(transport)), place,
            ("aaguid", .string(aaguid)), ("state", stateFile.map(JSONValue.string) ?? .null),
            ("pid", .integer(Int64(processID))),
        ])
    }
}

/// Serves one or many virtual keys made from one ``VirtualKeySettings`` over one transport,
/// until the calling task is cancelled: what `securitykey virtual serve` runs, for any program
/// that needs keys a host can reach.
///
/// Many keys (``keys`` holds them) are served over UDP only, on consecutive ports (or any free
/// port each), in memory, each with its own AAGUID, attestation identity and credentials.
public final class VirtualKeyServer: Sendable {
    /// The most keys one server runs (one socket each, all on one I/O thread).
    public static let maximumCount = 256
    /// How long ``replug()`` keeps UDP keys out of their ports: long enough for a host's
    /// once-a-second probe to see them gone.
    public static let unpluggedTime: Duration = .seconds(2)

    private enum Servers: Sendable {
        case udp([UDPCTAPHIDServer], host: String)
        case pcsc(VPCDCardServer, host: String, port: UInt16)
        case uhid(UHIDServer, serialNumber: String)
    }

    /// The keys served, in port order.
    public let keys: [VirtualKey]
    /// The state file of the one key, if it keeps one.
    public let stateFile: String?
    private let servers: Servers

    /// Makes `count` keys from `settings` and their servers; UDP sockets are bound here (so
    /// ``ports`` is known), the other transports open nothing until ``run(onReady:)``.
    ///
    /// `stateFile` (one key only) keeps the key's state across runs; `latency` makes every CTAP2
    /// and U2F command answer no earlier than that after it arrived (``LatencyHandler``);
    /// `fault` makes the servers misbehave on purpose (``VirtualKeyFault``).
    /// Throws ``VirtualKeyError`` (settings, state file; `count` above 1 with another transport
    /// than UDP or with a state file; a fault the transport cannot show) or `TransportError`
    /// (a UDP port that cannot be bound).
    public init(
        settings: VirtualKeySettings, transport: VirtualKeyTransport, count: Int = 1,
        stateFile: String? = nil,
        userPresence: UserPresencePolicy = .approve, latency: Duration? = nil, fault: VirtualKeyFault? = nil,
        logger: Logger = Logger(label: "securitykey.virtual")
    ) throws {
        if let fault, !fault.applies(to: transport) {
            throw VirtualKeyError(
                .invalidConfiguration,
                "The fault \(fault) cannot be shown over this transport (silent-after-select: --pcsc; silent-after-init: --udp, --uhid)."
            )
        }
        guard (1...Self.maximumCount).contains(count) else {
            throw VirtualKeyError(.invalidConfiguration, "A server runs 1 to \(Self.maximumCount) keys.")
        }
        if count > 1 {
            guard case .udp = transport, stateFile == nil else {
                throw VirtualKeyError(
                    .invalidConfiguration, "Many keys are served over UDP, without a state file.")
            }
        }
        if case .uhid(let serialNumber) = transport, !VirtualKeyTransport.isValidSerialNumber(serialNumber) {
            throw VirtualKeyError(
                .invalidConfiguration, "A uhid serial number is up to 63 ASCII characters, no newline or '='."
            )
        }
        let configuration = settings.configuration
        var keys: [VirtualKey] = []
        for _ in 0..<count {
            // A new key each time: its own AAGUID, attestation identity and credentials.
            keys.append(
                try VirtualKey(
                    configuration: configuration, stateFile: stateFile, userPresence: userPresence,
                    logger: logger))
        }
        let handlers: [any CTAPMessageHandler] = keys.map { key in
            guard let latency, latency > .zero else { return key }
            return LatencyHandler(key, latency: latency)
        }
        switch transport {
        case .udp(let host, let port):
            if port != 0, Int(port) + count - 1 > Int(UInt16.max) {
                throw VirtualKeyError(
                    .invalidConfiguration, "\(count) keys from port \(port) run past port 65535.")
            }
            var servers: [UDPCTAPHIDServer] = []
            for (index, handler) in handlers.enumerated() {
                var udpConfiguration = UDPCTAPHIDServer.Configuration(
                    host: host, port: port == 0 ? 0 : port + UInt16(index),
                    capabilities: settings.ctaphidCapabilities)
                udpConfiguration.fault = fault
                servers.append(
                    try UDPCTAPHIDServer(handler: handler, configuration: udpConfiguration, logger: logger))
            }
            self.servers = .udp(servers, host: host)
        case .pcsc(let host, let port):
            var cardConfiguration = VPCDCardServer.Configuration(host: host, port: port)
            cardConfiguration.ctap1Only = settings.ctap1Only
            cardConfiguration.fault = fault
            self.servers = .pcsc(
                VPCDCardServer(handler: handlers[0], configuration: cardConfiguration, logger: logger),
                host: host, port: port)
        case .uhid(let serialNumber):
            var uhidConfiguration = UHIDServer.Configuration(
                serialNumber: serialNumber, capabilities: settings.ctaphidCapabilities)
            uhidConfiguration.fault = fault
            self.servers = .uhid(
                UHIDServer(handler: handlers[0], configuration: uhidConfiguration, logger: logger),
                serialNumber: serialNumber)
        }
        self.keys = keys
        self.stateFile = stateFile
    }

    /// The bound UDP ports, one per key; empty for the other transports.
    public var ports: [UInt16] {
        guard case .udp(let servers, _) = servers else { return [] }
        return servers.map(\.port)
    }

    /// Serves every key until the calling task is cancelled or a server fails. `onReady` is
    /// called once, with one document per key, when hosts can reach them: at once over UDP and
    /// vpcd, once the kernel's hidraw node appears over uhid (within 10 s, or this throws
    /// ``VirtualKeyError/Code/noDevice``). Throws `TransportError` when a server fails.
    /// `onVPCD` hears whether the vpcd card is connected, as that changes (`false` while vpcd
    /// cannot be reached).
    public func run(
        onReady: @escaping @Sendable ([VirtualKeyReadiness]) -> Void,
        onVPCD: @escaping @Sendable (Bool) -> Void = { _ in }
    ) async throws {
        let pid = getpid()
        func document(_ key: VirtualKey, _ transport: String, uri: String? = nil, vpcd: String? = nil)
            -> VirtualKeyReadiness
        {
            VirtualKeyReadiness(
                transport: transport, uri: uri, vpcd: vpcd, aaguid: Hex.uuid(key.aaguid),
                stateFile: stateFile,
                processID: pid)
        }
        switch servers {
        case .udp(let servers, let host):
            onReady(zip(keys, servers).map { document($0, "udp", uri: "udp:\(host):\($1.port)") })
            // One I/O thread waits on every key's socket; one failing ends them all.
            try await UDPCTAPHIDServer.serve(servers)
        case .pcsc(let server, let host, let port):
            onReady([document(keys[0], "pcsc", vpcd: "\(host):\(port)")])
            await server.run(onConnection: onVPCD)
        case .uhid(let server, let serialNumber):
            let key = keys[0]
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                group.addTask {
                    // The kernel names the node; find it by the serial number we gave it.
                    guard
                        let node = await UHIDServer.hidrawNode(
                            serialNumber: serialNumber, within: .seconds(10))
                    else {
                        if Task.isCancelled { return }
                        throw VirtualKeyError(
                            .noDevice, "The uhid device was created but no hidraw node appeared within 10 s.")
                    }
                    onReady([document(key, "uhid", uri: "hid:\(node)")])
                }
                // Either child failing ends the serve (leaving cancels the other); a found
                // node leaves the server running.
                while try await group.next() != nil {}
            }
        }
    }

    /// Serves every key (``run(onReady:onVPCD:)``) until SIGINT or SIGTERM arrives, then stops
    /// serving and answers the signal's name ("end" if serving ended by itself): what a program
    /// serving keys until it is told to stop runs. Each SIGUSR1 meanwhile power-cycles the keys
    /// (``replug()``), then calls `onPowerCycle`. A server's error, if it fails first, is thrown.
    public func serveUntilInterrupted(
        onReady: @escaping @Sendable ([VirtualKeyReadiness]) -> Void,
        onVPCD: @escaping @Sendable (Bool) -> Void = { _ in },
        onPowerCycle: @escaping @Sendable () -> Void = {}
    ) async throws -> String {
        try await ProcessSignals.runUntilInterrupted(
            { try await self.run(onReady: onReady, onVPCD: onVPCD) }, handling: [(SIGUSR1, "SIGUSR1")]
        ) { _ in
            await self.replug()
            onPowerCycle()
        }
    }

    /// Power-cycles every key, as unplugging and plugging it back in would: over UDP the keys
    /// first leave their ports for ``unpluggedTime`` (they answer nothing, so hosts see them
    /// go); the reset window opens again and PIN-entry blocks, tokens and pending enumerations
    /// are cleared.
    public func replug() async {
        if case .udp(let servers, _) = servers {
            for server in servers { server.unplug(for: Self.unpluggedTime) }
            try? await Task.sleep(for: Self.unpluggedTime)
        }
        for key in keys { await key.powerCycle() }
    }
}
