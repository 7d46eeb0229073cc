#if canImport(Glibc)
    import Glibc
#endif
import _SecurityKeyInternals
import ArgumentParser
import Authenticators
import CBOR
import CTAP2
import Dispatch
import FoundationEssentials
import SecurityKeys
import Synchronization
import Transport

/// `securitykey bio info|list|enroll|rename|delete`: fingerprints (CTAP 2.1 §6.7).
struct BioCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bio",
        abstract: "Enroll, list, rename and delete the fingerprints of a key with a fingerprint sensor.",
        discussion: """
            Needs the key's PIN for a token with the bio enrollment permission (built-in user \
            verification only where the key allows it for enrollment, uvBioEnroll). Fingerprint \
            template IDs are printed and taken in base64url, as credential IDs are.
            """,
        subcommands: [
            BioInfoCommand.self, BioListCommand.self, BioEnrollCommand.self, BioRenameCommand.self,
            BioDeleteCommand.self,
        ])
}

/// Decodes a fingerprint template ID given on the command line.
func templateID(_ text: String) throws(CLIError) -> [UInt8] {
    guard let id = FingerprintTemplate.id(base64URL: text) else {
        throw CLIError.usage("\"\(text)\" is not a fingerprint template ID in base64url.")
    }
    return id
}

struct BioInfoCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "info", abstract: "Describe the fingerprint sensor (no PIN needed).",
        discussion: """
            With --json: {device, modality, fingerprintKind, samplesRequired, maxNameLength, enrolled}; \
            samplesRequired and maxNameLength are null when the key does not report them, enrolled \
            says whether a finger is enrolled (getInfo bioEnroll).
            """)

    @OptionGroup var options: CredentialsOptions
    var wantsJSON: Bool { options.global.json }

    func execute() async throws {
        try await withAuthenticator(options.global) { key, deadline in
            let sensor = try await key.fingerprintSensorInfo(deadline: deadline)
            let info = await key.info
            let enrolled = info.options.isEnabled(.bioEnroll) || info.options.isEnabled(.userVerificationManagementPreview)
            if wantsJSON { return Console.json(sensor.json(device: key.uri, enrolled: enrolled)) }
            Console.out("Fingerprint sensor: \(sensor.fingerprintKind?.description ?? "unknown kind")")
            if let samples = sensor.maxCaptureSamplesRequiredForEnroll {
                Console.out("Samples per enrollment: \(samples)")
            }
            if let length = sensor.maxTemplateFriendlyName { Console.out("Longest name: \(length) bytes") }
            Console.out("Fingerprints enrolled: \(enrolled ? "yes" : "none")")
        }
    }
}

struct BioListCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the enrolled fingerprints.",
        discussion: "With --json: an array of {id (base64url), name (or null)}.")

    @OptionGroup var options: CredentialsOptions
    var wantsJSON: Bool { options.global.json }

    func execute() async throws {
        let interaction = options.interaction()
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            let templates = try await key.fingerprints(interaction: interaction, deadline: deadline)
            if wantsJSON {
                Console.json(.array(templates.map(\.json)))
            } else if templates.isEmpty {
                Console.out("No fingerprint is enrolled.")
            } else {
                for t in templates { Console.out("\(Base64URL.encode(t.id))  \(t.shownName ?? "(no name)")") }
            }
        }
    }
}

struct BioEnrollCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "enroll", abstract: "Enroll a finger, one sample at a time.",
        discussion: """
            Each sample's feedback and the samples still needed are shown on standard error: as one \
            progress line on a terminal, a line per sample otherwise. Ctrl-C abandons the enrollment \
            and tells the key. The enrollment may take up to 5 minutes or --timeout, whichever is \
            longer. With --json: {device, id, name, samples: [{sample, status, statusCode, remaining}]}.
            """)

    @OptionGroup var options: CredentialsOptions
    @Option(name: .long, help: ArgumentHelp("A friendly name for the new fingerprint.", valueName: "name"))
    var name: String?
    @Option(
        name: .long,
        help: ArgumentHelp("Seconds the key waits for the finger at each sample (default: the key's own).", valueName: "seconds"))
    var sampleTimeout: Double?
    var wantsJSON: Bool { options.global.json }
    /// SIGINT and SIGTERM abandon the enrollment through the key (cancelCurrentEnrollment).
    var cancelsOnSignal: Bool { false }

    func validate() throws {
        if let name, name.isEmpty { throw ValidationError("--name cannot be empty.") }
        if let sampleTimeout, !(0.1...600).contains(sampleTimeout) {
            throw ValidationError("--sample-timeout must be between 0.1 and 600 seconds.")
        }
    }

    func execute() async throws {
        let interaction = options.interaction()
        let cancellation = FingerprintEnrollmentCancellation()
        let finished = EnrollmentFinished()
        let (signals, stop) = ProcessSignals.names()
        defer {
            finished.flag.store(true, ordering: .releasing)
            stop()
        }
        let reporter = SampleReporter(terminal: isatty(STDERR_FILENO) == 1)
        let name = self.name
        let sampleTimeout = self.sampleTimeout.map { Duration.milliseconds(Int64(($0 * 1000).rounded())) }
        let global = options.global
        let wantsJSON = self.wantsJSON
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await withAuthenticator(global) { key, _ in
                    let deadline = Deadline.after(max(global.timeoutDuration, Authenticator.enrollmentTime))
                    let enrollment: FingerprintEnrollment
                    do {
                        enrollment = try await key.enrollFingerprint(
                            name: name, sampleTimeout: sampleTimeout, cancellation: cancellation,
                            interaction: interaction, deadline: deadline, progress: reporter.report)
                    } catch {
                        reporter.finishLine()
                        throw interaction.explain(error)
                    }
                    reporter.finishLine()
                    let template = enrollment.template
                    if wantsJSON {
                        Console.json(enrollment.json(device: key.uri))
                    } else {
                        Console.out(
                            "Fingerprint \(Base64URL.encode(template.id)) enrolled\(template.shownName.map { " as \"\($0)\"" } ?? "").")
                    }
                }
            }
            group.addTask {
                for await _ in signals {
                    if cancellation.isCancelled { SignalCancellation.exitCancelled() }
                    cancellation.cancel()
                    // A PIN prompt blocks on the terminal and cannot see the cancellation.
                    DispatchQueue.global().asyncAfter(deadline: .now() + 5) {
                        if !finished.flag.load(ordering: .acquiring) { SignalCancellation.exitCancelled() }
                    }
                }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }
}

/// Set once `bio enroll` has ended, so a pending grace-period exit does nothing.
final class EnrollmentFinished: Sendable {
    let flag = Atomic<Bool>(false)
}

/// Shows each fingerprint sample's feedback on standard error.
final class SampleReporter: Sendable {
    private let terminal: Bool
    private let lineOpen = Atomic<Bool>(false)

    init(terminal: Bool) { self.terminal = terminal }

    /// The progress callback of the enrollment.
    var report: @Sendable (FingerprintEnrollmentEvent) -> Void {
        { [self] event in
            switch event {
            case .waitingForSample(let number):
                let text = "Sample \(number): place your finger on the sensor."
                if terminal {
                    write("\r\u{1B}[K" + text)
                    lineOpen.store(true, ordering: .relaxed)
                } else if number == 1 {
                    Console.err(text)
                }
            case .sampleCaptured(let number, let sample):
                let rest = sample.remainingSamples == 0 ? "Enrollment complete." : "\(sample.remainingSamples) more needed."
                let text = "Sample \(number): \(sample.status.name) - \(sample.status.advice) \(rest)"
                if terminal {
                    write("\r\u{1B}[K" + text)
                    lineOpen.store(true, ordering: .relaxed)
                } else {
                    Console.err(text)
                }
            }
        }
    }

    /// Ends an open progress line so that what follows starts on its own line.
    func finishLine() {
        if lineOpen.exchange(false, ordering: .relaxed) { write("\n") }
    }

    private func write(_ text: String) {
        FileIO.write(descriptor: FileIO.standardError, text)
    }
}

struct BioRenameCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "rename", abstract: "Change an enrolled fingerprint's friendly name.",
        discussion: "With --json: {device, renamed, name}.")

    @OptionGroup var options: CredentialsOptions
    // All unrecognized: a base64url template ID may start with "-".
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("The template ID (base64url, as `bio list` shows), then the new name.", valueName: "id name"))
    var values: [String] = []
    var id: String { values.first ?? "" }
    var name: String { values.dropFirst().first ?? "" }
    var wantsJSON: Bool { options.global.json }

    func validate() throws {
        guard values.count == 2 else { throw ValidationError("Give the template ID and the new name.") }
        if name.isEmpty { throw ValidationError("The name cannot be empty.") }
    }

    func execute() async throws {
        let target = try templateID(id)
        let interaction = options.interaction()
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            try await key.renameFingerprint(id: target, name: name, interaction: interaction, deadline: deadline)
            Console.result(
                json: wantsJSON, .members([("device", .string(key.uri)), ("renamed", .string(id)), ("name", .string(name))]),
                "The fingerprint \(id) is now named \"\(name)\".")
        }
    }
}

struct BioDeleteCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete an enrolled fingerprint (asks first).",
        discussion: "With --json: {device, deleted}. The finger no longer unlocks the key.")

    @OptionGroup var options: CredentialsOptions
    @Flag(name: .long, help: "Do not ask for confirmation.")
    var yes = false
    // All unrecognized: a base64url template ID may start with "-".
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("The template ID (base64url, as `bio list` shows).", valueName: "id"))
    var values: [String] = []
    var id: String { values.first ?? "" }
    var wantsJSON: Bool { options.global.json }

    func validate() throws {
        guard values.count == 1 else { throw ValidationError("Give one template ID.") }
    }

    func execute() async throws {
        let target = try templateID(id)
        let interaction = options.interaction()
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            try await Confirmation.ask(about: key, assumeYes: yes, deadline: deadline) {
                "Delete fingerprint \(id) from \($0)? That finger will no longer unlock the key."
            }
            try await key.deleteFingerprint(id: target, interaction: interaction, deadline: deadline)
            Console.result(
                json: wantsJSON, .members([("device", .string(key.uri)), ("deleted", .string(id))]),
                "The fingerprint \(id) is deleted.")
        }
    }
}
