import ArgumentParser
import CTAP2
import Dispatch
import Foundation
import Logging
import VirtualAuthenticator

/// `securitykey virtual`: the virtual authenticator as a long-running process.
struct VirtualCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "virtual", abstract: "Run a virtual security key for testing.",
        subcommands: [VirtualServeCommand.self])
}

struct VirtualServeCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a virtual security key until SIGINT or SIGTERM.",
        discussion: """
            --pcsc connects to vsmartcard's vpcd (default 127.0.0.1:35963, or SECURITYKEY_VPCD_HOST and \
            SECURITYKEY_VPCD_PORT when set), so pcscd and every PC/SC client see a contactless FIDO card. \
            State (AAGUID, attestation identity, credentials, PIN) is kept in --state FILE, written \
            atomically after every change; without --state it lives in memory only. With --json one line \
            describing the key is printed on standard output once it serves.
            """)

    @Flag(name: .long, help: "Serve the key as a card to vpcd (PC/SC).")
    var pcsc = false

    @Flag(
        name: .long,
        help: "Serve the key as CTAPHID over UDP (default 127.0.0.1:8111), as firmware emulators do.")
    var udp = false

    @Argument(
        help: ArgumentHelp("Where vpcd listens (--pcsc) or where to listen (--udp).", valueName: "host:port"))
    var address: String?

    @Option(
        name: .long, help: ArgumentHelp("The state file (created mode 0600 when missing).", valueName: "file")
    )
    var state: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How the simulated user answers touch requests: auto, delay:MS, deny or never.",
            valueName: "policy"))
    var presence: String = "auto"

    @Option(
        name: .long, help: ArgumentHelp("A PIN the key starts with (for test keys only).", valueName: "pin"))
    var pin: String?

    @Option(name: .long, help: ArgumentHelp("The AAGUID of a new key, as a UUID.", valueName: "uuid"))
    var aaguid: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Attestation of new credentials: packed, self or none.", valueName: "kind"))
    var attestation: String = "packed"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write the attestation root certificate (PEM) here, for verifiers.", valueName: "file"))
    var attestationRoot: String?

    @Flag(name: .long, help: "Print a JSON line describing the served key on standard output.")
    var json = false

    @Flag(name: .shortAndLong, help: "Log commands and statuses on standard error; twice for more.")
    var verbose: Int

    var wantsJSON: Bool { json }

    func validate() throws {
        guard pcsc != udp else { throw ValidationError("Choose exactly one of --pcsc and --udp.") }
        _ = try parsePresence()
    }

    func parsePresence() throws(CLIError) -> UserPresencePolicy {
        switch presence {
        case "auto": return .approve
        case "deny": return .deny
        case "never": return .never
        default:
            if presence.hasPrefix("delay:"), let ms = Int(presence.dropFirst(6)), ms >= 0, ms <= 600_000 {
                return .approveAfter(.milliseconds(ms))
            }
            throw CLIError.usage(
                "--presence takes auto, delay:MS (0 to 600000), deny or never, not \"\(presence)\".")
        }
    }

    static func parseAddress(_ text: String) throws(CLIError) -> (host: String, port: UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]),
            port > 0
        else {
            throw CLIError.usage("\"\(text)\" is not HOST:PORT.")
        }
        let host = String(text[..<colon])
        guard !host.isEmpty else { throw CLIError.usage("\"\(text)\" names no host.") }
        return (host, port)
    }

    func execute() async throws {
        LogBootstrap.bootstrapOnce()
        var logger = Logger(label: "securitykey.virtual")
        logger.logLevel = verbose >= 2 ? .trace : (verbose == 1 ? .debug : .notice)
        var configuration = VirtualKey.Configuration()
        if let aaguid {
            guard let parsed = AAGUID(uuidString: aaguid) else {
                throw CLIError.usage("--aaguid takes a UUID such as 01234567-89ab-cdef-0123-456789abcdef.")
            }
            configuration.aaguid = parsed.bytes
        }
        switch attestation {
        case "packed": configuration.attestation = .packed
        case "self": configuration.attestation = .selfAttestation
        case "none": configuration.attestation = .none
        default: throw CLIError.usage("--attestation takes packed, self or none.")
        }
        configuration.pin = pin
        let key = try VirtualKey(
            configuration: configuration, stateFile: state, userPresence: try parsePresence(), logger: logger)
        if let attestationRoot {
            do {
                try Data(key.attestationRootCertificatePEM.utf8).write(
                    to: URL(fileURLWithPath: attestationRoot))
            } catch {
                throw CLIError(
                    .failure, code: "io", "Cannot write \(attestationRoot): \(error.localizedDescription)")
            }
        }
        let env = ProcessInfo.processInfo.environment
        let target: (host: String, port: UInt16)
        if let address {
            target = try Self.parseAddress(address)
        } else if udp {
            target = ("127.0.0.1", 8111)
        } else {
            target = (
                env["SECURITYKEY_VPCD_HOST"] ?? "127.0.0.1",
                env["SECURITYKEY_VPCD_PORT"].flatMap { UInt16($0) } ?? 35963
            )
        }
        let aaguidText = AAGUID(bytes: key.aaguid)?.description ?? Hex.encode(key.aaguid)
        let body: @Sendable () async -> Void
        let whereText: String
        if udp {
            let server = try UDPCTAPHIDServer(
                handler: key, configuration: .init(host: target.host, port: target.port), logger: logger)
            body = { try? await server.run() }
            whereText = "over CTAPHID/UDP at udp:\(target.host):\(server.port)"
        } else {
            let server = VPCDCardServer(
                handler: key, configuration: .init(host: target.host, port: target.port), logger: logger)
            body = { await server.run() }
            whereText = "to vpcd at \(target.host):\(target.port)"
        }
        if json {
            Console.out(
                JSONValue.members([
                    ("transport", udp ? "udp" : "pcsc"),
                    (
                        udp ? "uri" : "vpcd",
                        .string(udp ? "udp:\(target.host):\(target.port)" : "\(target.host):\(target.port)")
                    ),
                    ("aaguid", .string(aaguidText)), ("state", state.map(JSONValue.string) ?? .null),
                    ("pid", .integer(Int64(ProcessInfo.processInfo.processIdentifier))),
                ]).text())
        }
        Console.err("securitykey: virtual key \(aaguidText) served \(whereText); SIGINT or SIGTERM stops it.")
        let signal = await Self.serveUntilSignal(body)
        Console.err(
            "securitykey: \(signal) received; the virtual key stopped\(state.map { ", state saved in \($0)" } ?? "")."
        )
    }

    /// Runs `body` until SIGINT or SIGTERM arrives, then cancels it and waits for it to finish.
    static func serveUntilSignal(_ body: @escaping @Sendable () async -> Void) async -> String {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        var sources: [any DispatchSourceSignal] = []
        for (number, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(name) }
            source.resume()
            sources.append(source)
        }
        defer { for source in sources { source.cancel() } }
        return await withTaskGroup(of: String?.self) { group in
            group.addTask {
                await body()
                return nil
            }
            group.addTask {
                for await name in stream { return name }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            continuation.finish()
            return first ?? "end"
        }
    }
}
