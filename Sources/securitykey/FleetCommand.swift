import ArgumentParser
import Authenticators
import CBOR
import CTAP2
import Fleet
import FoundationEssentials
import _SecurityKeyInternals
import Transport
import WebAuthnVerification

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `securitykey fleet`: every key on every transport inspected at once, with a touch-free
/// health check and, with `--policy`, a compliance verdict per key.
struct FleetCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Inventory and health-check every security key present, in parallel.",
        discussion: """
            Each key is inspected within its own --key-timeout (at most --concurrency at once): \
            getInfo, PIN and UV attempts left (no attempt is spent) and a silent up=false \
            getAssertion that a healthy key refuses with CTAP2_ERR_NO_CREDENTIALS. No touch is needed. \
            Output: a table, --json (an array), --ndjson (one line per key as it finishes) or --csv. \
            With --policy FILE each key gets a verdict, and the exit status is 7 when any key fails it. \
            Field names and the policy rules are in Docs/CLI.md.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print one JSON object per key, on its own line, as each key finishes.")
    var ndjson = false

    @Flag(name: .long, help: "Print CSV: a header line, then one row per key.")
    var csv = false

    @Option(
        name: .long,
        help: ArgumentHelp("A JSON policy every key must satisfy (exit status 7 if any does not).", valueName: "file"))
    var policy: String?

    @Option(name: .long, help: ArgumentHelp("How many keys to inspect at once.", valueName: "n"))
    var concurrency: Int = 16

    @Option(
        name: .long,
        help: ArgumentHelp("Seconds one key may take before it is reported as timed out.", valueName: "seconds"))
    var keyTimeout: Double = 10

    @Flag(
        name: .long,
        help: "Also register a throwaway credential on each healthy key and verify its attestation (a touch per key; they blink together)."
    )
    var attest = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --attest: trust these roots (PEM/DER file or directory, repeatable) instead of the MDS cache.",
            valueName: "path"))
    var trustRoot: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("With --attest: seconds each key may wait for its touch.", valueName: "seconds"))
    var touchTimeout: Double = 30

    @Flag(
        name: .long,
        help: "With --attest: a key whose attestation CRLs cannot be fetched, verified or are out of date is not genuine.")
    var requireRevocation = false

    @Flag(
        name: .long,
        help: "Keep running: report each key as it arrives (inspected) and leaves, until interrupted.")
    var watch = false

    var wantsJSON: Bool { global.json || ndjson }

    func validate() throws {
        guard [global.json, ndjson, csv].filter({ $0 }).count <= 1 else {
            throw ValidationError("Choose one of --json, --ndjson and --csv.")
        }
        guard concurrency >= 1, concurrency <= 1024 else {
            throw ValidationError("--concurrency must be between 1 and 1024.")
        }
        guard keyTimeout > 0, keyTimeout <= 3600 else {
            throw ValidationError("--key-timeout must be between 0 and 3600 seconds.")
        }
        guard touchTimeout > 0, touchTimeout <= 3600 else {
            throw ValidationError("--touch-timeout must be between 0 and 3600 seconds.")
        }
        if !trustRoot.isEmpty && !attest { throw ValidationError("--trust-root needs --attest.") }
        if requireRevocation && !attest { throw ValidationError("--require-revocation needs --attest.") }
        if watch && csv { throw ValidationError("--watch prints a table, --json or --ndjson lines, not CSV.") }
        if watch && global.device != nil { throw ValidationError("--watch follows every key; it takes no --device.") }
    }

    /// `--watch` runs until a signal, which ends it normally (not as a cancellation).
    var cancelsOnSignal: Bool { !watch }

    func execute() async throws {
        let rules = try policy.map(Self.loadPolicy)
        let logger = global.makeLogger()
        // Configured UDP endpoints are inspected whether or not they answer a probe: one that
        // is silent is a key that failed, and probing them one by one would serialize the fleet.
        let endpoints = try global.udpEndpoints()
        // Watching follows configured UDP endpoints through their probes, like any discovery.
        let directory = AuthenticatorDirectory.system(udpEndpoints: watch ? endpoints : [], logger: logger)
        let configured = endpoints.map { DeviceDescriptor(uri: $0.uri, transport: .udp, product: "CTAPHID over UDP") }
        let anchors = try trustAnchors()
        let inventory = FleetInventory(
            directory: directory, concurrency: concurrency,
            keyTimeout: .milliseconds(Int64((keyTimeout * 1000).rounded())),
            attestation: attest
                ? FleetInventory.AttestationCheck(touchTimeout: .milliseconds(Int64((touchTimeout * 1000).rounded())))
                : nil,
            tokenStore: StoredTokens.store, logger: logger)
        if attest && isatty(STDERR_FILENO) == 1 {
            Console.err("fleet: touch each key when it blinks, to check its attestation.")
        }
        if watch {
            // Interrupting the watch is how it ends: SIGINT or SIGTERM stop it with status 0.
            _ = try await VirtualServeCommand.serveUntilSignal { [self] in
                await watchFleet(inventory, rules: rules, anchors: anchors)
            }
            return
        }
        var devices: [DeviceDescriptor]
        var denied: AuthenticatorError?
        if let uri = global.device {
            // --device narrows the fleet to that one key.
            devices = [DeviceDescriptor(uri: uri, transport: TransportKind(rawValue: Self.scheme(of: uri)))]
        } else {
            (devices, denied) = await inventory.devices(including: configured)
        }
        guard !devices.isEmpty else {
            if let denied { throw denied }
            throw CLIError(.noDevice, code: "no-device", "No security key found.")
        }
        let metadata = try? MDSCLI.cache.load()?.payload
        let cacheStatus = metadata != nil ? try? MDSCLI.cacheStatus() : nil
        let requireRevocation = self.requireRevocation
        let progress = isatty(STDERR_FILENO) == 1 && !ndjson ? FleetProgress(total: devices.count) : nil
        let ndjson = self.ndjson
        progress?.show(done: 0)
        var done = 0
        let attest = self.attest
        var rowsByURI: [String: FleetRow] = [:]
        let reports = await inventory.inspect(
            devices, overall: attest ? .after(global.timeoutDuration + .seconds(touchTimeout)) : global.deadline()
        ) { report in
            done += 1
            progress?.show(done: done)
            let verdict =
                attest
                ? await FleetAttestationVerdict.judge(
                    report, metadata: metadata, anchors: anchors, revocation: RevocationChecker(),
                    requiresRevocation: requireRevocation) : nil
            let row = FleetRow(report: report, metadata: metadata, policy: rules, attestation: verdict)
            rowsByURI[report.descriptor.uri] = row
            if ndjson { Console.out(row.json.text()) }
        }
        progress?.clear()
        let rows = reports.compactMap { rowsByURI[$0.descriptor.uri] }
        if global.json {
            Console.json(.array(rows.map(\.json)))
        } else if csv {
            Console.out(FleetRow.csvLine(FleetRow.csvHeader))
            for row in rows { Console.out(FleetRow.csvLine(row.csvFields)) }
        } else if !ndjson {
            for line in FleetRow.table(rows, withPolicy: rules != nil, withAttestation: attest) { Console.out(line) }
            if let cacheStatus { Console.out(cacheStatus.summary) }
        }
        if rules != nil, rows.contains(where: { $0.violations?.isEmpty == false }) {
            let failing = rows.filter { $0.violations?.isEmpty == false }.count
            Console.err("securitykey: \(failing) of \(rows.count) key(s) fail the policy.")
            throw ExitCode(CLIExitStatus.policyFailed.rawValue)
        }
    }

    /// The `--trust-root` anchors, nil when none are given.
    func trustAnchors() throws -> AttestationTrustAnchors? {
        guard !trustRoot.isEmpty else { return nil }
        var anchors = AttestationTrustAnchors()
        for path in trustRoot {
            do { try anchors.add(contentsOf: path) } catch { throw CLIError.usage(error.message) }
        }
        return anchors
    }

    static func scheme(of uri: String) -> String {
        uri.firstIndex(of: ":").map { String(uri[..<$0]) } ?? uri
    }

    /// Reads and decodes the policy file; a file that is not a policy is a usage error.
    static func loadPolicy(_ path: String) throws -> FleetPolicy {
        let url = URL(fileURLWithPath: path)
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let size = attributes?[.size] as? Int, size > 1 << 20 {
            throw CLIError.usage("The policy file \(path) is larger than 1 MiB.")
        }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw CLIError.usage("Cannot read the policy file \(path).")
        }
        do {
            return try JSONDecoder().decode(FleetPolicy.self, from: data)
        } catch DecodingError.dataCorrupted(let context) {
            throw CLIError.usage("The policy file \(path) is not valid: \(context.debugDescription)")
        } catch {
            throw CLIError.usage("The policy file \(path) is not a valid policy (\(error)).")
        }
    }
}

/// "keys done / total" on one rewritten line of standard error (only on a terminal).
final class FleetProgress: Sendable {
    let total: Int
    init(total: Int) { self.total = total }

    func show(done: Int) {
        FileIO.write(descriptor: FileIO.standardError, "\r\u{1B}[Kfleet: \(done)/\(total) key(s) inspected")
    }

    func clear() {
        FileIO.write(descriptor: FileIO.standardError, "\r\u{1B}[K")
    }
}
