import _SecurityKeyInternals
import ArgumentParser
import Authenticators
import CBOR
import CTAP2
import SecurityKeys
import Transport

/// `securitykey credentials info|list|delete|update`: discoverable credentials (CTAP 2.1 §6.8).
struct CredentialsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credentials",
        abstract: "List, delete and rename the discoverable credentials (passkeys) stored on the key.",
        discussion: """
            Needs the key's PIN (or built-in user verification) for a token with the credential \
            management permission. Credential IDs are printed and taken in base64url, as WebAuthn \
            relying parties store them.
            """,
        subcommands: [
            CredentialsInfoCommand.self, CredentialsListCommand.self, CredentialsDeleteCommand.self,
            CredentialsUpdateCommand.self,
        ])
}

/// Options of the subcommands that manage what the key stores behind its PIN (credentials, bio,
/// largeblob).
struct CredentialsOptions: ParsableArguments {
    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "Read PINs from standard input instead of the terminal.")
    var pinStdin = false

    func interaction() -> CLIInteraction {
        CLIInteraction(reader: PINReader(fromStandardInput: pinStdin))
    }
}

/// Decodes a credential ID given on the command line.
func credentialID(_ text: String) throws(CLIError) -> [UInt8] {
    guard let id = Base64URL.decode(text), !id.isEmpty else {
        throw CLIError.usage("\"\(text)\" is not a credential ID in base64url.")
    }
    return id
}

struct CredentialsInfoCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "info", abstract: "How many discoverable credentials the key holds, and how many more fit.",
        discussion: "With --json: {device, existing, remaining}.")

    @OptionGroup var options: CredentialsOptions
    var wantsJSON: Bool { options.global.json }

    func execute() async throws {
        let interaction = options.interaction()
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            let (metadata, storedToken) = try await StoredTokens.read(key) { token in
                try await key.credentialMetadata(storedToken: token, interaction: interaction, deadline: deadline)
            }
            Console.result(
                json: wantsJSON,
                .members([
                    ("device", .string(key.uri)), ("existing", .integer(Int64(clamping: metadata.existingCount))),
                    ("remaining", .integer(Int64(clamping: metadata.maxRemaining))),
                    ("storedToken", .bool(storedToken)),
                ]),
                "Discoverable credentials: \(metadata.existingCount) stored, room for about \(metadata.maxRemaining) more.")
        }
    }
}

struct CredentialsListCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the discoverable credentials, by relying party.",
        discussion: """
            With --json: an array with one object per credential: rpId, rpName, userId (base64url), \
            userName, displayName, credentialId (base64url), credProtect (1-3, or null), \
            largeBlobKey (whether the credential has one), thirdPartyPayment (true, false, or null from \
            a key before CTAP 2.2).
            """)

    @OptionGroup var options: CredentialsOptions
    @Option(name: .long, help: ArgumentHelp("Only this relying party's credentials.", valueName: "rp-id"))
    var rp: String?
    var wantsJSON: Bool { options.global.json }

    func execute() async throws {
        let interaction = options.interaction()
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            let parties = try await StoredTokens.read(key) { token in
                try await key.credentialsByRelyingParty(
                    rpID: rp, storedToken: token, interaction: interaction, deadline: deadline)
            }.result
            if wantsJSON {
                return Console.json(
                    .array(parties.flatMap { party in party.credentials.map { $0.json(relyingParty: party.relyingParty) } }))
            }
            if parties.allSatisfy(\.credentials.isEmpty) {
                Console.out(rp.map { "No discoverable credential for \($0)." } ?? "No discoverable credential is stored.")
                return
            }
            for party in parties where !party.credentials.isEmpty {
                Console.out(party.relyingParty.id)
                for credential in party.credentials { Console.out(credential.summary) }
            }
        }
    }
}

struct CredentialsDeleteCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a discoverable credential from the key (asks first).",
        discussion: "With --json: {device, deleted}. The account can no longer sign in with this key.")

    @OptionGroup var options: CredentialsOptions
    @Option(name: .long, help: ArgumentHelp("The credential's relying party (binds the PIN token to it).", valueName: "rp-id"))
    var rp: String?
    @Flag(name: .long, help: "Do not ask for confirmation.")
    var yes = false
    // All unrecognized: a base64url credential ID may start with "-".
    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("The credential ID (base64url, as `credentials list` shows).", valueName: "id"))
    var values: [String] = []
    var id: String { values.first ?? "" }
    var wantsJSON: Bool { options.global.json }

    func validate() throws {
        guard values.count == 1 else { throw ValidationError("Give one credential ID.") }
    }

    func execute() async throws {
        let target = try credentialID(id)
        let interaction = options.interaction()
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            try await Confirmation.ask(about: key, assumeYes: yes, deadline: deadline) {
                "Delete credential \(id) from \($0)? Its account can no longer sign in with this key."
            }
            try await key.deleteCredential(id: target, rpID: rp, interaction: interaction, deadline: deadline)
            Console.result(
                json: wantsJSON, .members([("device", .string(key.uri)), ("deleted", .string(id))]),
                "The credential \(id) is deleted.")
        }
    }
}

struct CredentialsUpdateCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "update", abstract: "Change the user name or display name stored with a credential.",
        discussion: "With --json: {device, updated, userName, displayName}.")

    @OptionGroup var options: CredentialsOptions
    @Option(name: .long, help: "The new user name.")
    var name: String?
    @Option(name: .long, help: "The new display name.")
    var displayName: String?
    // All unrecognized: a base64url credential ID may start with "-".
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The credential ID (base64url).", valueName: "id"))
    var values: [String] = []
    var id: String { values.first ?? "" }
    var wantsJSON: Bool { options.global.json }

    func validate() throws {
        guard values.count == 1 else { throw ValidationError("Give one credential ID.") }
        guard name != nil || displayName != nil else {
            throw ValidationError("Give --name, --display-name or both.")
        }
    }

    func execute() async throws {
        let target = try credentialID(id)
        let interaction = options.interaction()
        let name = self.name, displayName = self.displayName
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            let user = try await key.updateUser(
                credentialID: target, name: name, displayName: displayName, interaction: interaction,
                deadline: deadline)
            Console.result(
                json: wantsJSON,
                .members([
                    ("device", .string(key.uri)), ("updated", .string(id)),
                    ("userName", user.name.map(JSONValue.string) ?? .null),
                    ("displayName", user.displayName.map(JSONValue.string) ?? .null),
                ]),
                "The credential \(id) now stores \(user.name ?? "no name") (\(user.displayName ?? "no display name")).")
        }
    }
}
