import ArgumentParser
import Authenticators
import CBOR
import CTAP2
import Transport

/// `securitykey config enterprise-attestation|always-uv|min-pin-length`: authenticatorConfig
/// (CTAP 2.1 §6.11).
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Change the key's settings (authenticatorConfig; asks first).",
        subcommands: [
            ConfigEnterpriseAttestationCommand.self, ConfigAlwaysUVCommand.self, ConfigMinPINLengthCommand.self,
        ])
}

/// Options of every config subcommand.
struct ConfigOptions: ParsableArguments {
    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "Read PINs from standard input instead of the terminal.")
    var pinStdin = false
    @Flag(name: .long, help: "Do not ask for confirmation (for scripts).")
    var yes = false

    /// Confirms `change` for the key, re-identifies it, and runs `body` with the user's
    /// interaction; prompts that got no answer explain the failure.
    func change(
        _ describe: @escaping @Sendable (String) -> String,
        _ body: @escaping @Sendable (Authenticator, CLIInteraction, Deadline) async throws -> JSONValue
    ) async throws {
        let interaction = CLIInteraction(reader: PINReader(fromStandardInput: pinStdin))
        try await withAuthenticator(global, explaining: interaction) { key, deadline in
            guard await key.info.options.isSupported(.authenticatorConfig) else {
                throw AuthenticatorError(
                    .notSupported, "The security key does not support authenticatorConfig.", deviceURI: key.uri)
            }
            try await Confirmation.ask(about: key, assumeYes: yes, deadline: deadline, describe)
            let result = try await body(key, interaction, deadline)
            if global.json {
                guard case .object(let members) = result else { return }
                Console.json(.object([("device", .string(key.uri))] + members))
            }
        }
    }
}

struct ConfigEnterpriseAttestationCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "enterprise-attestation",
        abstract: "Enable enterprise attestation (the key may then identify itself to the relying parties its vendor configured).",
        discussion: "Only `enable` exists: the key turns it off again only by a reset. With --json: {device, enterpriseAttestation}.")

    @OptionGroup var options: ConfigOptions
    @Argument(help: ArgumentHelp("enable", valueName: "action"))
    var action: String
    var wantsJSON: Bool { options.global.json }

    func validate() throws {
        guard action == "enable" else { throw ValidationError("The only action is `enable`.") }
    }

    func execute() async throws {
        try await options.change({
            "Enable enterprise attestation on \($0)? Relying parties its vendor names may then receive an attestation that identifies this very key; only a reset turns it off."
        }) { key, interaction, deadline in
            try await key.enableEnterpriseAttestation(interaction: interaction, deadline: deadline)
            let enabled = await key.info.options.isEnabled(.enterpriseAttestation)
            if !options.global.json { Console.out(enabled ? "Enterprise attestation is enabled." : "The key did not enable enterprise attestation.") }
            return .members([("enterpriseAttestation", .bool(enabled))])
        }
    }
}

struct ConfigAlwaysUVCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "always-uv",
        abstract: "Require user verification (PIN or built-in UV) for every registration and sign-in, or not.",
        discussion: "With --json: {device, alwaysUv, changed}.")

    @OptionGroup var options: ConfigOptions
    @Argument(help: ArgumentHelp("on or off", valueName: "state"))
    var state: String
    var wantsJSON: Bool { options.global.json }

    func validate() throws {
        guard state == "on" || state == "off" else { throw ValidationError("Say `on` or `off`.") }
    }

    func execute() async throws {
        let wanted = state == "on"
        try await options.change({
            wanted
                ? "Turn always-UV on for \($0)? Every registration and sign-in will then need the PIN or built-in verification, and U2F sign-ins stop working."
                : "Turn always-UV off for \($0)? Sites may then register and sign in with a touch alone."
        }) { key, interaction, deadline in
            let (now, changed) = try await key.setAlwaysUV(wanted, interaction: interaction, deadline: deadline)
            if !options.global.json {
                Console.out(changed ? "Always-UV is \(now ? "on" : "off") now." : "Always-UV was already \(now ? "on" : "off"); nothing changed.")
            }
            return .members([("alwaysUv", .bool(now)), ("changed", .bool(changed))])
        }
    }
}

struct ConfigMinPINLengthCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "min-pin-length",
        abstract: "Raise the key's minimum PIN length (it can never be lowered again but by a reset).",
        discussion: """
            --rp names relying parties allowed to read the minimum through the minPinLength \
            extension; --force-change makes the key demand a new PIN before its next use. \
            With --json: {device, minPINLength, rpIds, forcePINChange}.
            """)

    @OptionGroup var options: ConfigOptions
    @Argument(help: ArgumentHelp("The new minimum, in characters (Unicode code points).", valueName: "length"))
    var length: Int
    @Option(name: .long, help: ArgumentHelp("A relying party that may read the minimum; repeatable.", valueName: "rp-id"))
    var rp: [String] = []
    @Flag(name: .long, help: "Make the key demand a new PIN before its next use.")
    var forceChange = false
    var wantsJSON: Bool { options.global.json }

    func validate() throws {
        guard (4...63).contains(length) else { throw ValidationError("The minimum PIN length must be 4 to 63.") }
    }

    func execute() async throws {
        let length = self.length, rpIDs = rp, force = forceChange
        try await options.change({
            var text = "Raise the minimum PIN length of \($0) to \(length)? It cannot be lowered again without a reset."
            if force { text += " The key will then demand a new PIN before its next use." }
            return text
        }) { key, interaction, deadline in
            try await key.setMinPINLength(
                UInt64(length), rpIDs: rpIDs.isEmpty ? nil : rpIDs, forceChangePIN: force, interaction: interaction,
                deadline: deadline)
            let info = await key.info
            let minimum = Int(clamping: info.minPINLength ?? UInt64(length))
            if !options.global.json {
                Console.out("The minimum PIN length is \(minimum).")
                if info.forcePINChange == true { Console.out("The key demands a new PIN: run `securitykey pin change`.") }
            }
            return .members([
                ("minPINLength", .integer(Int64(minimum))), ("rpIds", .array(rpIDs.map(JSONValue.string))),
                ("forcePINChange", .bool(info.forcePINChange ?? false)),
            ])
        }
    }
}
