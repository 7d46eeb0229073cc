#if canImport(Glibc)
    import Glibc
#endif
import _SecurityKeyInternals
import ArgumentParser
import CBOR
import CTAP2
import Dispatch
import FoundationEssentials
import Logging
import Transport
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
            --uhid creates a USB FIDO key through the kernel's /dev/uhid (needs write access to it and the \
            uhid module): hidapi, libfido2 and browsers see a /dev/hidrawN node like a real key's. \
            State (AAGUID, attestation identity, credentials, PIN) is kept in --state FILE, written \
            atomically after every change; without --state it lives in memory only. With --json one line \
            describing the key is printed on standard output once it serves.

            --profile picks what the key implements: ctap22 (the default: FIDO_2_2 and FIDO_2_3, everything \
            of ctap21 plus thirdPartyPayment, attestationFormats, maxPINLength, pinComplexityPolicy, \
            authenticatorConfigCommands and the other CTAP 2.2 getInfo members), ctap20 (FIDO_2_0 with clientPIN), \
            ctap21 (FIDO_2_1: credential management, authenticatorConfig with setMinPINLength and \
            alwaysUv, makeCredUvNotRqd, pinUvAuthToken permissions, large blobs with the \
            largeBlobKey extension (--max-large-blob sets maxSerializedLargeBlobArray, 1024 by default), \
            and an enterprise attestation certificate of its own, off until enabled) or ctap21-pre (FIDO_2_1_PRE with \
            credentialMgmtPreview only, as keys shipped before CTAP 2.1 was final).

            --bio adds a simulated fingerprint sensor to a ctap22 or ctap21 (bioEnroll, command 0x09) or ctap21-pre \
            (userVerificationMgmtPreview, command 0x40) key: fingerprints are enrolled with `securitykey bio \
            enroll` from the samples --bio-samples scripts (each sample's feedback in order, across \
            enrollments; `timeout` means no finger comes and the capture times out), and kept in --state. \
            Once a finger is enrolled the key reports built-in user verification (uv), which matches.

            Power-up: authenticatorReset works only within 10 s of a power-up. A vpcd card insertion \
            (--pcsc) and a new uhid device (--uhid) are power-ups, as is the start of the process; \
            over --udp, send SIGUSR1 to this process (kill -USR1 PID) to pull the key out of its port \
            for 2 s (it answers nothing, so hosts see it go) and plug it back in powered up: the reset \
            window opens again and PIN-entry blocks, tokens and pending enumerations are cleared.

            --count N (with --udp) serves N keys from this one process on ports PORT to PORT+N-1 \
            (port 0: any free port each), each with its own AAGUID, attestation identity and credentials, \
            in memory only (--state, --aaguid and --attestation-root name one key and are refused); \
            --json prints one line per key. --latency MS makes every CTAP2 and U2F command answer no \
            earlier than MS after it arrived, as a real key's own processing time would; CTAPHID INIT, \
            PING and WINK stay immediate. The wait is a sleep, so many slow keys cost almost no CPU.
            """)

    @Flag(name: .long, help: "Serve the key as a card to vpcd (PC/SC).")
    var pcsc = false

    @Flag(
        name: .long,
        help: "Serve the key as CTAPHID over UDP (default 127.0.0.1:8111), as firmware emulators do.")
    var udp = false

    @Flag(name: .long, help: "Serve the key as a USB HID device through /dev/uhid (Linux).")
    var uhid = false

    @Argument(
        help: ArgumentHelp("Where vpcd listens (--pcsc) or where to listen (--udp).", valueName: "host:port"))
    var address: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The USB serial number of the --uhid device (default: one naming this process).",
            valueName: "text"))
    var serial: String?

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

    @Option(
        name: .long,
        help: ArgumentHelp("What the key implements: ctap22 (the default), ctap21, ctap21-pre or ctap20.", valueName: "profile"))
    var profile: String?

    @OptionGroup(title: "CTAP 2.2") var ctap22Options: VirtualCTAP22Options

    /// The profile chosen: ctap22 unless --profile names another (ctap20 for a U2F-only key).
    var chosenProfile: VirtualKeySettings.Profile {
        profile.flatMap(VirtualKeySettings.Profile.init(rawValue:)) ?? (ctap1Only ? .ctap20 : .ctap22)
    }

    @Flag(
        name: .long,
        help: "With --profile ctap22 or ctap21: start with enterprise attestation enabled."
    )
    var enterpriseAttestation = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --profile ctap22 or ctap21: an RP ID that gets an enterprise attestation for enterpriseAttestation 1 (repeatable).",
            valueName: "rp-id"))
    var enterpriseAttestationRP: [String] = []

    @Flag(name: .long, help: "With --profile ctap22 or ctap21: start with alwaysUv on.")
    var alwaysUV = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Replace the profile's extensions (comma-separated: credProtect, credBlob, hmac-secret, hmac-secret-mc, minPinLength, largeBlobKey; empty for none).",
            valueName: "list"))
    var extensions: String?

    @Option(name: .long, help: ArgumentHelp("The longest credBlob stored (32 to 4096).", valueName: "bytes"))
    var maxCredBlobLength: Int = 32

    @Flag(
        name: .long,
        help:
            "With --profile ctap22, ctap21 or ctap21-pre: a simulated fingerprint sensor (bio enrollment, built-in UV once a finger is enrolled)."
    )
    var bio = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The fingerprint samples the user presents, in order (good, too-high, too-low, too-left, too-right, too-fast, too-slow, poor-quality, too-skewed, too-short, merge-failure, exists, no-user-activity, no-user-presence-transition, or timeout); good ones once the list runs out. Implies --bio.",
            valueName: "list"))
    var bioSamples: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Good samples an enrollment needs (default 4). Implies --bio.", valueName: "n"))
    var bioSamplesRequired: Int?

    /// Whether the key gets a fingerprint sensor.
    var wantsBio: Bool { bio || bioSamples != nil || bioSamplesRequired != nil }

    @Flag(
        name: .customLong("ctap1-only"),
        help: "Behave as a key that speaks only CTAP1/U2F (CTAP2 commands rejected, no CBOR capability).")
    var ctap1Only = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --profile ctap22 or ctap21: the largest serialized large-blob array stored (maxSerializedLargeBlobArray, at least 1024).",
            valueName: "bytes"))
    var maxLargeBlob: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The COSE algorithms the key offers, in getInfo's order: es256, eddsa, es384, es512, es256k, rs256, ps256, mldsa65, mldsa87 or numbers (default: all but the ML-DSA ones; with ML-DSA, maxMsgSize is 7609).",
            valueName: "list"))
    var algorithms: String?

    @Flag(name: .long, help: "Print a JSON line describing the served key on standard output.")
    var json = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --udp: serve N keys from this process, on ports PORT to PORT+N-1.",
            valueName: "n"))
    var count: Int = 1

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Answer every CTAP2/U2F command no earlier than MS after it arrived (a real key's own time).",
            valueName: "ms"))
    var latency: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Tests only: misbehave on purpose, silent-after-select (--pcsc) or silent-after-init (--udp, --uhid).",
            valueName: "name"))
    var fault: String?

    @Flag(name: .shortAndLong, help: "Log commands and statuses on standard error; twice for more.")
    var verbose: Int

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Tests only: append every pinUvAuthToken issued and shared secret agreed to FILE (like SSLKEYLOGFILE); needs SECURITYKEY_ALLOW_SECRETS_LOG=1.",
            valueName: "file"))
    var secretsLog: String?

    var wantsJSON: Bool { json }
    /// SIGINT and SIGTERM end the serve loop in ``serveUntilSignal(_:)``, which saves the state.
    var cancelsOnSignal: Bool { false }

    func validate() throws {
        guard [pcsc, udp, uhid].filter({ $0 }).count == 1 else {
            throw ValidationError("Choose exactly one of --pcsc, --udp and --uhid.")
        }
        if uhid, address != nil { throw ValidationError("--uhid takes no address.") }
        if !uhid, serial != nil { throw ValidationError("--serial goes with --uhid.") }
        if secretsLog != nil, count > 1 {
            throw ValidationError("--secrets-log goes with one key; leave out --count.")
        }
        _ = try parsePresence()
        if let fault, !VirtualKeyFault.all.map(\.rawValue).contains(fault) {
            throw ValidationError("--fault takes silent-after-select or silent-after-init, not \"\(fault)\".")
        }
        try validateMany()
        if let profile, VirtualKeySettings.Profile(rawValue: profile) == nil {
            throw ValidationError("--profile takes ctap22, ctap21, ctap21-pre or ctap20, not \"\(profile)\".")
        }
        let profile = chosenProfile
        if wantsBio, profile == .ctap20 {
            throw ValidationError(
                "--bio, --bio-samples and --bio-samples-required need --profile ctap22, ctap21 or ctap21-pre.")
        }
        if ctap22Options.fingerprint != nil, !wantsBio {
            throw ValidationError("--fingerprint needs --bio.")
        }
        if ctap22Options.isUsed, profile != .ctap22 {
            throw ValidationError(
                "--pin-complexity, --max-pin-length, --long-touch-reset, --reset-transports and --uv-attempts need --profile ctap22.")
        }
        if let bioSamplesRequired, !(1...50).contains(bioSamplesRequired) {
            throw ValidationError("--bio-samples-required takes 1 to 50.")
        }
        if let bioSamples {
            do { _ = try ScriptedFingerprintSample.parse(bioSamples) } catch {
                throw ValidationError("--bio-samples: \(error.message)")
            }
        }
        if ctap1Only, self.profile != nil || pin != nil || wantsBio {
            throw ValidationError(
                "--ctap1-only makes a U2F key: it takes no --profile, no --pin and no --bio.")
        }
        let isCTAP21 = profile == .ctap21 || profile == .ctap22
        if !isCTAP21, enterpriseAttestation || alwaysUV || !enterpriseAttestationRP.isEmpty {
            throw ValidationError(
                "--enterprise-attestation, --enterprise-attestation-rp and --always-uv need --profile ctap22 or ctap21."
            )
        }
        if let maxLargeBlob {
            guard isCTAP21 else {
                throw ValidationError("--max-large-blob needs --profile ctap22 or ctap21.")
            }
            guard (1024...(1 << 20)).contains(maxLargeBlob) else {
                throw ValidationError("--max-large-blob takes 1024 to 1048576 bytes.")
            }
        }
    }

    /// `--algorithms`: a comma-separated list of names or COSE numbers the virtual key implements.
    static func parseAlgorithms(_ text: String) throws(CLIError) -> [VirtualAuthenticator.COSEAlgorithm] {
        typealias COSEAlgorithm = VirtualAuthenticator.COSEAlgorithm
        var list: [COSEAlgorithm] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = String(item).trimmingWhitespace(newlines: false)
            guard let algorithm = COSEAlgorithm(name: name), COSEAlgorithm.implemented.contains(algorithm) else {
                throw CLIError.usage(
                    "--algorithms takes \(COSEAlgorithm.implemented.map(\.name).joined(separator: ", ")) or their COSE numbers, not \"\(name)\"."
                )
            }
            guard !list.contains(algorithm) else { throw CLIError.usage("--algorithms names \(name) twice.") }
            list.append(algorithm)
        }
        return list
    }

    func parsePresence() throws(CLIError) -> UserPresencePolicy {
        guard let policy = UserPresencePolicy(name: presence) else {
            throw CLIError.usage(
                "--presence takes auto, delay:MS (0 to 600000), deny or never, not \"\(presence)\".")
        }
        return policy
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
        let transport = try self.transport()
        if secretsLog != nil, ProcessInfo.processInfo.environment["SECURITYKEY_ALLOW_SECRETS_LOG"] != "1" {
            // Anyone who reads the file can use the key's PIN-gated commands while a token
            // lives: never on by default, and only when the caller says it knows.
            throw CLIError.usage(
                "--secrets-log writes the key's tokens and shared secrets to a file, for leak tests only; set SECURITYKEY_ALLOW_SECRETS_LOG=1 to confirm."
            )
        }
        let server = try VirtualKeyServer(
            settings: try settings(), transport: transport, count: count, stateFile: state,
            userPresence: try parsePresence(), latency: latency.map { .milliseconds($0) },
            fault: fault.map(VirtualKeyFault.init(rawValue:)), logger: logger)
        for key in server.keys { await key.setUserVerification(ctap22Options.userVerification) }
        if let secretsLog, let key = server.keys.first {
            await key.recordSecrets(to: try VirtualKeySecretsLog(path: secretsLog))
            Console.err(
                "securitykey: warning: writing the virtual key's tokens and shared secrets to \(secretsLog).")
        }
        if let attestationRoot, let key = server.keys.first {
            if let reason = FileIO.write(path: attestationRoot, Array(key.attestationRootCertificatePEM.utf8)) {
                throw CLIError(.failure, code: "io", "Cannot write \(attestationRoot): \(reason).")
            }
        }
        let announce: @Sendable ([VirtualKeyReadiness]) -> Void = { [json, count, latency] documents in
            if json {
                for document in documents { Console.out(document.json.text()) }
            }
            if count == 1, let document = documents.first {
                Console.err(
                    "securitykey: virtual key \(document.aaguid) served \(document.location); SIGINT or SIGTERM stops it."
                )
            } else if case .udp(let host, _) = transport {
                let ports = server.ports
                Console.err(
                    "securitykey: \(count) virtual keys served over CTAPHID/UDP at udp:\(host):"
                        + "\(ports.min() ?? 0)...\(ports.max() ?? 0)"
                        + (latency.map { ", each answering after \($0) ms" } ?? "")
                        + "; SIGINT or SIGTERM stops them.")
            }
        }
        // Until vpcd answers (pcscd not started, vpcd on another port), the card is in no reader.
        let vpcd = transport.vpcdAddress
        let connection: @Sendable (Bool) -> Void = { connected in
            Console.err(
                connected
                    ? "securitykey: connected to vpcd at \(vpcd); the card is in its reader."
                    : "securitykey: waiting for vpcd at \(vpcd) (is pcscd running with vsmartcard's vpcd?).")
        }
        let signal = try await Self.serveUntilSignal(
            { try await server.run(onReady: announce, onVPCD: connection) }, powerCycle: { await server.replug() })
        Console.err(
            count == 1
                ? "securitykey: \(signal) received; the virtual key stopped\(state.map { ", state saved in \($0)" } ?? "")."
                : "securitykey: \(signal) received; the \(count) virtual keys stopped.")
    }

    /// Where the flags say to serve: --uhid with its serial number, --udp at the address (for
    /// --count keys, HOST:0 allowed), or --pcsc to vpcd (the environment's default address).
    func transport() throws(CLIError) -> VirtualKeyTransport {
        if uhid {
            let serialNumber = serial ?? "SKVIRTUAL-\(ProcessInfo.processInfo.processIdentifier)"
            guard VirtualKeyTransport.isValidSerialNumber(serialNumber) else {
                throw CLIError.usage("--serial takes up to 63 ASCII characters, no newline or '='.")
            }
            return .uhid(serialNumber: serialNumber)
        }
        if udp {
            let target: (host: String, port: UInt16) =
                count > 1
                ? try Self.parseManyAddress(address)
                : try address.map(Self.parseAddress) ?? ("127.0.0.1", 8111)
            return .udp(host: target.host, port: target.port)
        }
        let env = ProcessInfo.processInfo.environment
        let target: (host: String, port: UInt16) =
            try address.map(Self.parseAddress)
            ?? (
                env["SECURITYKEY_VPCD_HOST"] ?? "127.0.0.1",
                env["SECURITYKEY_VPCD_PORT"].flatMap { UInt16($0) } ?? 35963
            )
        return .pcsc(vpcdHost: target.host, vpcdPort: target.port)
    }

    /// The key the flags describe.
    func settings() throws -> VirtualKeySettings {
        var settings = VirtualKeySettings()
        settings.profile = chosenProfile
        ctap22Options.apply(to: &settings)
        settings.ctap1Only = ctap1Only
        settings.alwaysUV = alwaysUV
        settings.enterpriseAttestation = enterpriseAttestation
        settings.enterpriseAttestationRPIDs = enterpriseAttestationRP
        settings.maxLargeBlobArray = maxLargeBlob
        if let algorithms { settings.algorithms = try Self.parseAlgorithms(algorithms) }
        if let aaguid {
            guard let parsed = AAGUID(uuidString: aaguid) else {
                throw CLIError.usage("--aaguid takes a UUID such as 01234567-89ab-cdef-0123-456789abcdef.")
            }
            settings.aaguid = parsed.bytes
        }
        switch attestation {
        case "packed": settings.attestation = .packed
        case "self": settings.attestation = .selfAttestation
        case "none": settings.attestation = .none
        default: throw CLIError.usage("--attestation takes packed, self or none.")
        }
        settings.pin = pin
        settings.extensions = extensions.map {
            $0.split(separator: ",").map { $0.trimmingWhitespace(newlines: false) }
        }
        settings.maxCredBlobLength = maxCredBlobLength
        if wantsBio {
            var sensor = VirtualKey.FingerprintSensor()
            if let bioSamplesRequired { sensor.samplesRequired = bioSamplesRequired }
            if let bioSamples { sensor.samples = try ScriptedFingerprintSample.parse(bioSamples) }
            settings.fingerprintSensor = sensor
        }
        return settings
    }

    /// Runs `body` until SIGINT or SIGTERM arrives, then cancels it and waits for it to finish,
    /// and answers the signal's name ("end" if the body ended by itself); each SIGUSR1 meanwhile
    /// runs `powerCycle`. The body's error, if it fails first, is thrown.
    static func serveUntilSignal(
        _ body: @escaping @Sendable () async throws -> Void,
        powerCycle: @escaping @Sendable () async -> Void = {}
    ) async throws -> String {
        let (stream, stop) = SignalCancellation.signalNames()
        defer { stop() }
        let (powerUps, stopPowerUps) = powerCycleSignals()
        defer { stopPowerUps() }
        return try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                try await body()
                return nil
            }
            group.addTask {
                for await _ in powerUps {
                    await powerCycle()
                    Console.err("securitykey: SIGUSR1 received; the virtual key was power-cycled.")
                }
                return nil
            }
            group.addTask {
                for await name in stream { return name }
                return nil
            }
            // The power-cycle watcher runs until cancelled, so the first child to end is the
            // body or the signal watcher.
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first ?? "end"
        }
    }

    /// SIGUSR1 as it arrives (its default action, ending the process, is off meanwhile);
    /// `stop` ends the stream and the watching.
    static func powerCycleSignals() -> (stream: AsyncStream<Void>, stop: () -> Void) {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        signal(SIGUSR1, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
        source.setEventHandler { continuation.yield() }
        source.resume()
        return (
            stream,
            {
                source.cancel()
                continuation.finish()
            }
        )
    }
}

extension VirtualKeyTransport {
    /// `HOST:PORT` of vpcd for a PC/SC card (empty for the other transports).
    fileprivate var vpcdAddress: String {
        guard case .pcsc(let host, let port) = self else { return "" }
        return "\(host):\(port)"
    }
}
