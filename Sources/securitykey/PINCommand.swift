import ArgumentParser
import Authenticators
import CBOR
import CTAP2

/// `securitykey pin set|change|status`.
struct PINCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin", abstract: "Set, change or inspect the key's PIN.",
        subcommands: [
            PINStatusCommand.self, PINSetCommand.self, PINChangeCommand.self, PINVerifyCommand.self,
        ])
}

struct PINStatusCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Say whether a PIN is set and how many attempts are left.",
        discussion:
            "With --json: {device, pinSupported, pinSet, pinRetries, powerCycleRequired, pinBlocked, uvRetries, minPINLength, forcePINChange, maxPINLength, pinComplexityPolicy, uvCountSinceLastPinEntry} (the last three null when the key does not say)."
    )

    @OptionGroup var global: GlobalOptions
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        try await withAuthenticator(global) { key, deadline in
            let info = await key.info
            let supported = info.options.isSupported(.clientPIN)
            let isSet = info.options.isEnabled(.clientPIN)
            let status = supported ? try await key.pinStatus(deadline: deadline) : nil
            if global.json { return Console.json(PINStatus.json(status, device: key.uri, info: info)) }
            guard supported, let status else {
                Console.out("This key does not support a PIN.")
                return
            }
            Console.out(isSet ? "A PIN is set." : "No PIN is set; set one with `securitykey pin set`.")
            if status.isBlocked {
                Console.out(AuthenticatorError.pinBlocked(deviceURI: key.uri).message)
            } else if let retries = status.retries {
                Console.out("\(retries) PIN attempt(s) left before the key blocks its PIN.")
                if status.powerCycleRequired == true {
                    Console.out("Remove and re-insert the key before the next PIN attempt.")
                }
            }
            if let uv = status.uvRetries { Console.out("\(uv) built-in user verification attempt(s) left.") }
            for line in info.pinRuleLines { Console.out(line) }
            if info.forcePINChange == true {
                Console.out("The key demands a new PIN: run `securitykey pin change`.")
            }
        }
    }
}

struct PINSetCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set the first PIN of a key that has none.",
        discussion: "With --pin-stdin the new PIN is the first line of standard input.")

    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "Read the PIN from standard input instead of the terminal.")
    var pinStdin = false
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        let reader = PINReader(fromStandardInput: pinStdin)
        try await withAuthenticator(global) { key, deadline in
            let pin = try await key.clientPIN()
            guard pin.info.options[.clientPIN] != nil else {
                throw CLIError(
                    .notSupported, code: "pin-uv-not-supported", "This key does not support a PIN.")
            }
            guard pin.info.options[.clientPIN] == false else {
                throw CLIError(
                    .pinProblem, code: "pin-already-set",
                    "The key already has a PIN; use `securitykey pin change`.")
            }
            let newPIN = try reader.readNew("New PIN: ")
            try await pin.setPIN(newPIN, deadline: deadline)
            report(key, "The PIN is set.")
        }
    }

    private func report(_ key: Authenticator, _ text: String) {
        Console.result(json: global.json, .object([("device", .string(key.uri)), ("pinSet", true)]), text)
    }
}

struct PINChangeCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "change", abstract: "Change the PIN (the current one is asked first).",
        discussion: "With --pin-stdin standard input holds two lines: the current PIN, then the new one.")

    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "Read the PINs from standard input instead of the terminal.")
    var pinStdin = false
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        let reader = PINReader(fromStandardInput: pinStdin)
        try await withAuthenticator(global) { key, deadline in
            let pin = try await key.clientPIN()
            guard pin.info.options[.clientPIN] == true else {
                throw CLIError(
                    .pinProblem, code: "pin-not-set", "The key has no PIN yet; use `securitykey pin set`.")
            }
            let current = try reader.read("Current PIN: ")
            let newPIN = try reader.readNew("New PIN: ")
            do throws(CTAP2Error) {
                try await pin.changePIN(from: current, to: newPIN, deadline: deadline)
            } catch {
                throw CLIError(await pin.explain(error, deadline: deadline))
            }
            Console.result(
                json: global.json,
                .object([("device", .string(key.uri)), ("pinChanged", true)]),
                "The PIN is changed.")
        }
    }
}

struct PINVerifyCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a PIN against the key (a wrong one costs an attempt, as any use would).",
        discussion: """
            The PIN is checked by asking the key for a PIN token, which is thrown away at once. A \
            wrong PIN is asked again while attempts remain (with --pin-stdin, the next line). When \
            the key demands a new PIN, the new PIN is asked first, then the current one. With \
            --json: {device, verified, pinRetries}.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "Read PINs from standard input instead of the terminal.")
    var pinStdin = false
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        let interaction = CLIInteraction(reader: PINReader(fromStandardInput: pinStdin))
        try await withAuthenticator(global, explaining: interaction) { key, deadline in
            let retries = try await key.verifyPIN(interaction: interaction, deadline: deadline)
            Console.result(
                json: global.json,
                .members([
                    ("device", .string(key.uri)), ("verified", .bool(true)),
                    ("pinRetries", .integer(Int64(retries))),
                ]),
                "The PIN is right; \(retries) attempt(s) available.")
        }
    }
}
