#if canImport(Glibc)
    import Glibc
#endif
import ArgumentParser
import Authenticators
import Dispatch
import FoundationEssentials
import HIDTransport
import Logging
import SDBus
import SecurityKeyDaemonClient
import SecurityKeys
import Transport
import _SecurityKeyInternals

/// `securitykeyd`: owns the machine's security keys and performs WebAuthn ceremonies for the
/// applications that call it over D-Bus (Docs/Daemon.md).
@main
struct SecurityKeyDaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "securitykeyd",
        abstract: "Serve security keys to the applications of a session over D-Bus.",
        discussion: """
            Owns \(DaemonInterface.busName) on the session bus (or the system bus with --system) and \
            exports \(DaemonInterface.objectPath). Keys: USB (hidraw) and PC/SC, plus CTAPHID-over-UDP \
            endpoints from --udp and SECURITYKEY_UDP. Stops gracefully on SIGTERM or SIGINT.
            """,
        version: SecurityKeyPackage.version)

    @Flag(name: .long, help: "Use the system bus instead of the session bus.")
    var system = false

    @Option(
        name: .long,
        help: ArgumentHelp("Connect to the message bus at this D-Bus address.", valueName: "address"))
    var address: String?

    @Option(name: .long, help: ArgumentHelp("Own this bus name instead of the default.", valueName: "name"))
    var name: String = DaemonInterface.busName

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A CTAPHID-over-UDP key (host:port); repeatable, added to SECURITYKEY_UDP's.",
            valueName: "host:port"))
    var udp: [String] = []

    @Flag(name: .long, help: "Only the UDP keys: no USB or PC/SC (for tests).")
    var udpOnly = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The caller policy file binding executables to origins (see Docs/Daemon.md).", valueName: "file"))
    var policy: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Whom to serve besides the policy file's allow-lines: same-user (the session bus default) or active-seat (callers in the active login session of a seat; the system bus default).",
            valueName: "scope"))
    var callers: String?

    @Flag(
        name: .shortAndLong,
        help: "Log requests (-v) and protocol detail (-vv) on standard error. PINs are never logged.")
    var verbose: Int

    func validate() throws {
        if system, address != nil { throw ValidationError("--system and --address exclude each other.") }
        if let callers, CallerPolicy.Scope(rawValue: callers) == nil {
            throw ValidationError("--callers takes same-user or active-seat, not \(callers).")
        }
    }

    func run() async throws {
        let level: Logger.Level = verbose >= 2 ? .debug : verbose == 1 ? .info : .notice
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "securitykeyd")
        var callerPolicy: CallerPolicy
        do {
            callerPolicy =
                try policy.map { path throws(PolicyError) in try CallerPolicy(contentsOf: path) }
                ?? CallerPolicy()
        } catch {
            throw ValidationError(error.description)
        }
        callerPolicy.scope = callers.flatMap(CallerPolicy.Scope.init) ?? (system ? .activeSeat : .sameUser)
        let endpoints = try AuthenticatorDirectory.udpEndpoints(
            options: udp, environment: ProcessInfo.processInfo.environment)
        let directory =
            udpOnly
            ? AuthenticatorDirectory(
                discoveries: endpoints.isEmpty ? [] : [UDPDiscovery(endpoints: endpoints, logger: logger)],
                logger: logger)
            : AuthenticatorDirectory.system(udpEndpoints: endpoints, logger: logger)

        let busAddress: BusAddress = address.map(BusAddress.address) ?? (system ? .system : .session)
        let bus: BusConnection
        do {
            bus = try await BusConnection.open(
                address: busAddress, name: name, objectPath: DaemonInterface.objectPath,
                introspection: DaemonInterface.introspection)
        } catch {
            logger.critical("cannot serve on the bus", metadata: ["error": "\(error.message)"])
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
        let pool = KeyPool(directory: directory, logger: logger)
        let daemon = Daemon(bus: bus, pool: pool, policy: callerPolicy, logger: logger)
        // SIGTERM and SIGINT are caught from here on; one arriving before serving starts is kept.
        let (stopSignals, stopWatching) = ProcessSignals.names()
        defer { stopWatching() }
        let name = self.name

        await withDiscardingTaskGroup { group in
            group.addTask { await daemon.serve(bus.events) }
            group.addTask { await pool.follow() }
            group.addTask {
                for await change in pool.changes {
                    switch change {
                    case .added(let device):
                        bus.emitSignal(
                            path: DaemonInterface.objectPath, interface: DaemonInterface.interface,
                            member: SecurityKeyDaemonBus.deviceAdded,
                            destination: nil, [.dictionary(Daemon.entries(device))])
                    case .removed(let uri):
                        bus.emitSignal(
                            path: DaemonInterface.objectPath, interface: DaemonInterface.interface,
                            member: SecurityKeyDaemonBus.deviceRemoved,
                            destination: nil, [.string(uri)])
                    }
                }
            }
            ServiceManager.notify("READY=1")
            logger.notice("serving", metadata: ["name": "\(name)", "unique": "\(bus.uniqueName)"])
            for await _ in stopSignals { break }
            ServiceManager.notify("STOPPING=1")
            logger.notice("stopping: cancelling requests in flight")
            await daemon.shutdown()
            await pool.closeAll()
            bus.close()
            group.cancelAll()
        }
        logger.notice("stopped")
    }
}
