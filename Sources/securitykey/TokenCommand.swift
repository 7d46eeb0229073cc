import _SecurityKeyInternals
import ArgumentParser
import Authenticators
import CBOR
import CTAP2
import FoundationEssentials

/// `securitykey token save|forget|list`: persistent PIN/UV tokens (CTAP 2.2 pcmr) kept so that
/// `credentials list|info`, `info` and `fleet` read a key without asking for its PIN.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Keep a read-only persistent token so listing credentials needs no PIN (CTAP 2.2 keys).",
        discussion: """
            A key with the perCredMgmtRO option issues a persistent PIN/UV token with the pcmr \
            permission: it survives unplugging, allows only reading the discoverable credentials, and \
            decrypts the key's identifier (encIdentifier) and credential store state. `token save` asks \
            the PIN once and stores the token, bound to the key, in $XDG_STATE_HOME/securitykey/tokens.cbor \
            (~/.local/state/securitykey/tokens.cbor, mode 0600). Changing the PIN or resetting the key \
            makes the key refuse it; the commands using it then say so and remove it.
            """,
        subcommands: [TokenSaveCommand.self, TokenForgetCommand.self, TokenListCommand.self])
}

/// Finding and using the stored tokens, for every command that reads with one.
enum StoredTokens {
    /// The store in the user's state directory, or nil when neither XDG_STATE_HOME nor HOME is set.
    static var store: PersistentTokenStore? {
        PersistentTokenStore.defaultPath(environment: ProcessInfo.processInfo.environment).map(PersistentTokenStore.init)
    }

    /// The store, or a usage error saying why there is none.
    static func requiredStore() throws(CLIError) -> PersistentTokenStore {
        guard let store else {
            throw CLIError.usage("Set HOME or XDG_STATE_HOME: the stored tokens live in $XDG_STATE_HOME/securitykey.")
        }
        return store
    }

    /// Runs `read` with the stored token that fits `key`, or with none (``PersistentTokenStore/read(_:events:_:)``),
    /// saying on standard error what happened.
    static func read<T: Sendable>(
        _ key: Authenticator, _ read: (PINUVAuthToken?) async throws -> T
    ) async throws -> (result: T, storedToken: Bool) {
        guard let store else { return (try await read(nil), false) }
        return try await store.read(key, events: { tell($0, key.uri) }, read)
    }

    /// Says on standard error what happened to the stored token of `key`.
    static func tell(_ key: Authenticator) -> @Sendable (StoredTokenEvent) -> Void { { tell($0, key.uri) } }

    private static func tell(_ event: StoredTokenEvent, _ uri: String) {
        switch event {
        case .using: Console.err("securitykey: using the stored token for \(uri) (no PIN needed).")
        case .storeFailed(let error): Console.err("securitykey: \(error.message) Reading without the stored token.")
        case .removedStale:
            Console.err(
                "securitykey: the stored token for \(uri) is no longer valid (its PIN was changed or it was reset); "
                    + "it was removed. Run `securitykey token save` again.")
        }
    }
}

struct TokenSaveCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "save", abstract: "Ask the PIN once and store a persistent read-only token for the key.",
        discussion: "With --json: {device, aaguid, identifier (hex or null), pinUvAuthProtocol, path}.")

    @OptionGroup var options: CredentialsOptions
    var wantsJSON: Bool { options.global.json }

    func execute() async throws {
        let store = try StoredTokens.requiredStore()
        let interaction = options.interaction()
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            let record = try await key.savePersistentToken(
                in: store, savedAt: Int64(Date().timeIntervalSince1970), interaction: interaction, deadline: deadline)
            let identifier = record.identifier.map { Hex.encode($0) }
            if wantsJSON {
                Console.json(
                    .members([
                        ("device", .string(key.uri)), ("aaguid", .string(record.aaguid.description.lowercased())),
                        ("identifier", identifier.map(JSONValue.string) ?? .null),
                        ("pinUvAuthProtocol", .integer(Int64(record.pinUVAuthProtocol))), ("path", .string(store.path)),
                    ]))
            } else {
                Console.out(
                    "Stored a persistent token for \(key.uri)\(identifier.map { " (identifier \($0))" } ?? "") in \(store.path)."
                )
            }
        }
    }
}

struct TokenForgetCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget", abstract: "Remove the stored token of the key (or, with --all, every stored token).",
        discussion: "With --json: {removed}.")

    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "Remove every stored token, without opening a key.")
    var all = false
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        let store = try StoredTokens.requiredStore()
        let removed: Int
        if all {
            removed = try store.remove { _ in true }
        } else {
            removed = try await withAuthenticator(global) { key, _ in try await store.forget(key) }
        }
        if wantsJSON {
            Console.json(.object([("removed", .integer(Int64(removed)))]))
        } else {
            Console.out(removed == 0 ? "No stored token was removed." : "Removed \(removed) stored token(s).")
        }
    }
}

struct TokenListCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the stored tokens (never the tokens themselves).",
        discussion: """
            With --json: an array of {aaguid, identifier (hex or null), device (the URI it was saved \
            through), pinUvAuthProtocol, savedAt (ISO 8601, UTC)}.
            """)

    @OptionGroup var global: GlobalOptions
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        let store = try StoredTokens.requiredStore()
        let records = try store.records()
        if wantsJSON { return Console.json(.array(records.map(\.json))) }
        if records.isEmpty {
            Console.out("No token is stored (\(store.path)).")
            return
        }
        for r in records {
            let identifier = r.identifier.map { Hex.encode($0) } ?? "(no identifier)"
            Console.out("\(r.aaguid.description.lowercased())  \(identifier)  \(r.deviceURI)  saved \(r.savedAtText)")
        }
    }
}
