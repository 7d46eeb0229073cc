import _SecurityKeyInternals
import ArgumentParser
import CBOR
import CTAP2
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
        help: ArgumentHelp(
            "Attest with this P-256 private key (PEM) instead of the key's own; with --attestation-certificate.",
            valueName: "file"))
    var attestationKey: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The certificates (PEM) of --attestation-key: its attestation certificate first, then the CAs sent with it in x5c.",
            valueName: "file"))
    var attestationCertificate: String?

    @Option(
        name: .long,
        help: ArgumentHelp("What the key implements: ctap22 (the default), ctap21, ctap21-pre or ctap20.", valueName: "profile"))
    var profile: String?

    @OptionGroup(title: "CTAP 2.2") var ctap22Options: VirtualCTAP22Options

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
    /// SIGINT and SIGTERM end the serve loop (`VirtualKeyServer.serveUntilInterrupted`), which saves the state.
    var cancelsOnSignal: Bool { false }

    /// The flags as the virtual authenticator's options.
    var options: VirtualKeyOptions {
        var o = VirtualKeyOptions()
        (o.pcsc, o.udp, o.uhid, o.address, o.serial, o.state) = (pcsc, udp, uhid, address, serial, state)
        (o.presence, o.pin, o.aaguid, o.attestation, o.attestationRoot) = (presence, pin, aaguid, attestation, attestationRoot)
        (o.attestationKey, o.attestationCertificate) = (attestationKey, attestationCertificate)
        (o.profile, o.enterpriseAttestation, o.enterpriseAttestationRPs) = (profile, enterpriseAttestation, enterpriseAttestationRP)
        (o.alwaysUV, o.extensions, o.maxCredBlobLength, o.ctap1Only, o.maxLargeBlob) = (alwaysUV, extensions, maxCredBlobLength, ctap1Only, maxLargeBlob)
        (o.bio, o.bioSamples, o.bioSamplesRequired, o.algorithms) = (bio, bioSamples, bioSamplesRequired, algorithms)
        (o.count, o.latency, o.secretsLog, o.fault, o.ctap22) = (count, latency, secretsLog, fault, ctap22Options.options)
        return o
    }

    func validate() throws {
        do { try options.validate() } catch { throw ValidationError(error.message) }
    }

    func execute() async throws {
        LogBootstrap.bootstrapOnce()
        var logger = Logger(label: "securitykey.virtual")
        logger.logLevel = verbose >= 2 ? .trace : (verbose == 1 ? .debug : .notice)
        let options = self.options
        let environment = ProcessInfo.processInfo.environment
        let transport: VirtualKeyTransport
        let settings: VirtualKeySettings
        do throws(VirtualKeyError) {
            transport = try options.transport(environment: environment, processID: ProcessInfo.processInfo.processIdentifier)
            settings = try options.settings()
            try options.checkSecretsLog(environment: environment)
        } catch {
            throw CLIError.usage(error.message)
        }
        let server = try await options.server(transport: transport, settings: settings, logger: logger)
        if let secretsLog, !server.keys.isEmpty {
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
        let signal = try await server.serveUntilInterrupted(onReady: announce, onVPCD: connection) {
            Console.err("securitykey: SIGUSR1 received; the virtual key was power-cycled.")
        }
        Console.err(
            count == 1
                ? "securitykey: \(signal) received; the virtual key stopped\(state.map { ", state saved in \($0)" } ?? "")."
                : "securitykey: \(signal) received; the \(count) virtual keys stopped.")
    }
}
