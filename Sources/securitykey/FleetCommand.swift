import ArgumentParser
import Authenticators
import CBOR
import CTAP2
import Fleet
import FoundationEssentials
import HIDTransport
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
            Every key present is inspected at once, each within its own --key-timeout: getInfo, PIN and \
            UV attempts left (no attempt is spent) and a silent up=false getAssertion that a healthy key \
            refuses with CTAP2_ERR_NO_CREDENTIALS. No touch is needed. What bounds how many run at once: \
            pcsc-lite serves at most 16 readers (so at most 16 PC/SC cards), each key holds an open file \
            (the open-file limit, ulimit -n, halved), and --concurrency N if given. \
            Output: a table, --json (an array), --ndjson (one line per key as it finishes), --csv, or \
            --openmetrics (Prometheus text; --output FILE replaces FILE atomically, for node-exporter). \
            With --policy FILE each key gets a verdict, and the exit status is 7 when any key fails it. \
            Field names, metric names and the policy rules are in Docs/CLI.md and Docs/Fleet.md.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print one JSON object per key, on its own line, as each key finishes.")
    var ndjson = false

    @Flag(name: .long, help: "Print CSV: a header line, then one row per key.")
    var csv = false

    @Flag(name: .long, help: "Print OpenMetrics text for Prometheus (node-exporter's textfile collector).")
    var openmetrics = false

    @Option(
        name: .long,
        help: ArgumentHelp("With --openmetrics: replace this file atomically instead of printing.", valueName: "file"))
    var output: String?

    @Option(
        name: .long,
        help: ArgumentHelp("A JSON policy every key must satisfy (exit status 7 if any does not).", valueName: "file"))
    var policy: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "At most this many keys at once (default: every key, within pcsc-lite's 16 readers and the open-file limit).",
            valueName: "n"))
    var concurrency: Int?

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
        guard [global.json, ndjson, csv, openmetrics].filter({ $0 }).count <= 1 else {
            throw ValidationError("Choose one of --json, --ndjson, --csv and --openmetrics.")
        }
        if output != nil && !openmetrics { throw ValidationError("--output needs --openmetrics.") }
        if let concurrency, concurrency < 1 || concurrency > 65536 {
            throw ValidationError("--concurrency must be between 1 and 65536.")
        }
        guard keyTimeout > 0, keyTimeout <= 3600 else {
            throw ValidationError("--key-timeout must be between 0 and 3600 seconds.")
        }
        guard touchTimeout > 0, touchTimeout <= 3600 else {
            throw ValidationError("--touch-timeout must be between 0 and 3600 seconds.")
        }
        if !trustRoot.isEmpty && !attest { throw ValidationError("--trust-root needs --attest.") }
        if requireRevocation && !attest { throw ValidationError("--require-revocation needs --attest.") }
        if watch && (csv || openmetrics) { throw ValidationError("--watch prints a table, --json or --ndjson lines.") }
        if watch && global.device != nil { throw ValidationError("--watch follows every key; it takes no --device.") }
    }

    /// `--watch` runs until a signal, which ends it normally (not as a cancellation).
    var cancelsOnSignal: Bool { !watch }

    func execute() async throws {
        let rules: FleetPolicy?
        do throws(FleetError) {
            rules = try policy.map { (path) throws(FleetError) in try FleetPolicy.load(contentsOf: path) }
        } catch { throw CLIError.usage(error.message) }
        let logger = global.makeLogger()
        // Configured UDP endpoints are inspected whether or not they answer a probe: one that
        // is silent is a key that failed, and probing them one by one would serialize the fleet.
        let endpoints = try global.udpEndpoints()
        // Watching follows configured UDP endpoints through their probes, like any discovery.
        let directory = AuthenticatorDirectory.system(udpEndpoints: watch ? endpoints : [], logger: logger)
        let configured = endpoints.map(\.descriptor)
        let anchors = try trustAnchors()
        let inventory = FleetInventory(
            directory: directory, concurrency: .system(limit: concurrency),
            keyTimeout: .milliseconds(Int64((keyTimeout * 1000).rounded())),
            attestation: attest
                ? FleetInventory.AttestationCheck(touchTimeout: .milliseconds(Int64((touchTimeout * 1000).rounded())))
                : nil,
            tokenStore: StoredTokens.store, logger: logger)
        if attest && isatty(STDERR_FILENO) == 1 {
            Console.err("fleet: touch each key when it blinks, to check its attestation.")
        }
        let metadata = FleetMetadata.load(from: MDSCLI.cache)
        if watch {
            // Interrupting the watch is how it ends: SIGINT or SIGTERM stop it with status 0.
            // SIGUSR1 is ignored, as it always was (it power-cycles only virtual keys).
            _ = try await ProcessSignals.runUntilInterrupted(
                { [self] in await watchFleet(inventory, rules: rules, anchors: anchors, metadata: metadata) },
                handling: [(SIGUSR1, "SIGUSR1")])
            return
        }
        let (devices, denied) = await FleetRun.devices(inventory, uri: global.device, configured: configured)
        // A metrics file is written whatever was found: a host with no key reports zero keys.
        if devices.isEmpty && !openmetrics {
            if let denied { throw denied }
            throw CLIError(.noDevice, code: "no-device", "No security key found.")
        }
        let cacheStatus = metadata.payload != nil ? try? MDSCLI.cacheStatus() : nil
        let progress = isatty(STDERR_FILENO) == 1 && !ndjson ? FleetProgress(total: devices.count) : nil
        let ndjson = self.ndjson
        progress?.show(done: 0)
        var done = 0
        var run = await FleetRun.run(
            devices, inventory: inventory, metadata: metadata, policy: rules, anchors: anchors,
            requiresRevocation: requireRevocation,
            overall: attest ? .after(global.timeoutDuration + .seconds(touchTimeout)) : global.deadline()
        ) { row in
            done += 1
            progress?.show(done: done)
            if ndjson { Console.out(row.json.text()) }
        }
        run.listingProblem = denied
        progress?.clear()
        try report(run, cacheStatus: cacheStatus)
    }

    /// Prints or writes the finished run; exit status 7 when a key fails the policy.
    func report(_ run: FleetRun, cacheStatus: MetadataCacheStatus?) throws {
        if openmetrics, let output {
            do throws(FleetError) { try run.writeOpenMetrics(to: output) } catch {
                throw CLIError(.failure, code: error.code.rawValue, error.message)
            }
        } else if openmetrics {
            Console.out(run.openMetrics, terminator: "")
        } else if global.json {
            Console.json(.array(run.rows.map(\.json)))
        } else if csv {
            Console.out(FleetRow.csvLine(FleetRow.csvHeader))
            for row in run.rows { Console.out(FleetRow.csvLine(row.csvFields)) }
        } else if !ndjson {
            for line in FleetRow.table(run.rows, withPolicy: run.policy != nil, withAttestation: attest) { Console.out(line) }
            if let cacheStatus { Console.out(cacheStatus.summary) }
        }
        // A key whose attestation CRLs could not be used is said so, as `verify` says it.
        for row in run.rows {
            MDSCLI.warnUnlessRevocationChecked(row.attestation?.revocation, of: row.report.descriptor.uri)
        }
        if !run.failing.isEmpty {
            Console.err("securitykey: \(run.failing.count) of \(run.rows.count) key(s) fail the policy.")
            throw ExitCode(CLIExitStatus.policyFailed.rawValue)
        }
    }

    /// The `--trust-root` anchors, nil when none are given.
    func trustAnchors() throws -> AttestationTrustAnchors? {
        guard !trustRoot.isEmpty else { return nil }
        do { return try AttestationTrustAnchors(contentsOf: trustRoot) } catch { throw CLIError.usage(error.message) }
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
