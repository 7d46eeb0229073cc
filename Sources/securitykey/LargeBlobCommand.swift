import _SecurityKeyInternals
import ArgumentParser
import Authenticators
import CBOR
import CTAP2
import FoundationEssentials
import SecurityKeys
import Transport

/// `securitykey largeblob list|get|set|delete`: per-credential large blobs (CTAP 2.1 §6.10).
struct LargeBlobCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "largeblob",
        abstract: "Read and write the per-credential large blobs stored on the key (CTAP 2.1).",
        discussion: """
            Each blob belongs to a discoverable credential made with the largeBlobKey extension and \
            is encrypted with that credential's largeBlobKey, which the key gives through credential \
            management: so get, set and delete need the key's PIN (or built-in user verification), \
            and list needs it to say which credential an entry belongs to. Credential IDs are given \
            in base64url, as `credentials list` prints them. A corrupted array (its trailing hash does \
            not match) reads as empty and is reported; set and delete leave it as it is unless \
            --force is given.
            """,
        subcommands: [
            LargeBlobListCommand.self, LargeBlobGetCommand.self, LargeBlobSetCommand.self,
            LargeBlobDeleteCommand.self,
        ])
}

/// Options of every largeblob subcommand.
struct LargeBlobOptions: ParsableArguments {
    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "Read PINs from standard input instead of the terminal.")
    var pinStdin = false

    func interaction() -> CLIAuthenticatorInteraction {
        CLIAuthenticatorInteraction(reader: PINReader(fromStandardInput: pinStdin))
    }
}

/// The JSON of a corrupted array, or null.
func largeBlobCorruptionJSON(_ corruption: LargeBlobArray.Corruption?) -> JSONValue {
    guard let corruption else { return .null }
    return .members([("code", .string(corruption.code)), ("message", .string(corruption.description))])
}

/// Warns on standard error that the array is corrupted.
func warnCorrupted(_ corruption: LargeBlobArray.Corruption?) {
    guard let corruption else { return }
    Console.err(
        "Warning: the key's large-blob array is corrupted (\(corruption)); it reads as empty. `largeblob set` or `delete` with --force replaces it."
    )
}

struct LargeBlobListCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the entries of the key's large-blob array.",
        discussion: """
            Reading the array needs no PIN; matching entries to credentials reads the credentials' \
            largeBlobKeys and needs the PIN (skip it with --no-credentials). With --json: {device, \
            size, maxSize, corrupted (null or {code, message}), entries: [{index, entry (whether it is \
            a well-formed entry), ciphertextSize, nonce (hex), origSize, credentialId, rpId, userName \
            (null when no known key opens it), damaged (a reason, or null)}]}.
            """)

    @OptionGroup var options: LargeBlobOptions
    @Flag(name: .long, help: "Do not read the credentials' largeBlobKeys (no PIN is asked).")
    var noCredentials = false
    var wantsJSON: Bool { options.global.json }

    func execute() async throws {
        let interaction = options.interaction()
        let skipKeys = noCredentials
        try await withAuthenticator(options.global) { key, deadline in
            let reading: LargeBlobArray.Reading
            var credentials: [LargeBlobCredential] = []
            do {
                reading = try await key.largeBlobArray(deadline: deadline)
                let managed = await key.supportsCredentialManagement
                let verifies = await key.canVerifyUser
                let canReadKeys = managed && verifies
                if !skipKeys && canReadKeys && !reading.array.elements.isEmpty {
                    credentials = try await key.largeBlobCredentials(interaction: interaction, deadline: deadline)
                }
            } catch {
                throw interaction.explain(error)
            }
            let maxSize = await key.info.maxSerializedLargeBlobArray ?? UInt64(LargeBlobs.defaultMaxSerializedLength)
            let rows = reading.array.elements.indices.map { Row(index: $0, array: reading.array, credentials: credentials) }
            if wantsJSON {
                Console.json(
                    .members([
                        ("device", .string(key.uri)), ("size", .integer(Int64(reading.serializedLength))),
                        ("maxSize", .unsigned(maxSize)), ("corrupted", largeBlobCorruptionJSON(reading.corruption)),
                        ("entries", .array(rows.map(\.json))),
                    ]))
                return
            }
            warnCorrupted(reading.corruption)
            Console.out("Large-blob array: \(reading.serializedLength) of \(maxSize) bytes, \(rows.count) entries.")
            for row in rows { Console.out(row.line) }
        }
    }

    /// One element of the array as listed.
    struct Row {
        var index: Int
        var entry: LargeBlobEntry?
        var owner: LargeBlobCredential?
        var damage: String?

        init(index: Int, array: LargeBlobArray, credentials: [LargeBlobCredential]) {
            self.index = index
            entry = array.entry(at: index)
            guard let entry else { return }
            for credential in credentials {
                switch entry.open(key: credential.largeBlobKey) {
                case .otherKey: continue
                case .damaged(let reason): damage = reason
                case .data: break
                }
                owner = credential
                break
            }
        }

        var json: JSONValue {
            .members([
                ("index", .integer(Int64(index))), ("entry", .bool(entry != nil)),
                ("ciphertextSize", entry.map { .integer(Int64($0.ciphertext.count)) } ?? .null),
                ("nonce", entry.map { .string(Hex.encode($0.nonce)) } ?? .null),
                ("origSize", entry.map { .unsigned($0.originalSize) } ?? .null),
                ("credentialId", owner.map { .string(Base64URL.encode($0.credential.credentialID.id)) } ?? .null),
                ("rpId", owner.map { .string($0.rpID) } ?? .null),
                ("userName", owner?.credential.user.name.map(JSONValue.string) ?? .null),
                ("damaged", damage.map(JSONValue.string) ?? .null),
            ])
        }

        var line: String {
            guard let entry else { return "  #\(index)  not a large-blob entry (kept as it is)" }
            var text = "  #\(index)  \(entry.originalSize) bytes (\(entry.ciphertext.count) stored)  nonce \(Hex.encode(entry.nonce))"
            if let owner {
                text += "  \(owner.rpID) \(Base64URL.encode(owner.credential.credentialID.id))"
                if let name = owner.credential.user.name { text += " (\(name))" }
            } else {
                text += "  (no known credential)"
            }
            if let damage { text += "  damaged: \(damage)" }
            return text
        }
    }
}

struct LargeBlobGetCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print the large blob of a credential.",
        discussion: """
            Writes the blob's bytes as they are on standard output, or to --output. With --json: \
            {device, credentialId, rpId, size, data (base64url), corrupted}.
            """)

    @OptionGroup var options: LargeBlobOptions
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The credential ID (base64url).", valueName: "id"))
    var credential: String
    @Option(name: .long, help: ArgumentHelp("The credential's relying party (binds the PIN token to it).", valueName: "rp-id"))
    var rp: String?
    @Option(name: .shortAndLong, help: ArgumentHelp("Write the blob to this file.", valueName: "file"))
    var output: String?
    var wantsJSON: Bool { options.global.json }

    func execute() async throws {
        let id = try credentialID(credential)
        let interaction = options.interaction()
        try await withAuthenticator(options.global) { key, deadline in
            let found: (credential: LargeBlobCredential, lookup: LargeBlobs.Lookup)
            do {
                found = try await key.largeBlob(credentialID: id, rpID: rp, interaction: interaction, deadline: deadline)
            } catch {
                throw interaction.explain(error)
            }
            guard let data = found.lookup.data else {
                if let corruption = found.lookup.corruption {
                    throw CLIError(
                        .failure, code: "large-blob-corrupted",
                        "The key's large-blob array is corrupted (\(corruption)), so the credential has no readable blob.")
                }
                if let damage = found.lookup.damage {
                    throw CLIError(.failure, code: "large-blob-damaged", "The credential's large blob is damaged: \(damage).")
                }
                throw CLIError(.failure, code: "no-large-blob", "The credential \(credential) has no large blob.")
            }
            if let output {
                if let reason = FileIO.write(path: output, data) {
                    throw CLIError(.failure, code: "io", "Cannot write \(output): \(reason).")
                }
            }
            if wantsJSON {
                Console.json(
                    .members([
                        ("device", .string(key.uri)), ("credentialId", .string(credential)),
                        ("rpId", .string(found.credential.rpID)), ("size", .integer(Int64(data.count))),
                        ("data", .string(Base64URL.encode(data))),
                        ("corrupted", largeBlobCorruptionJSON(found.lookup.corruption)),
                    ]))
            } else if output == nil {
                FileIO.write(descriptor: FileIO.standardOutput, data)
            }
        }
    }
}

struct LargeBlobSetCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Store a file (or standard input) as the large blob of a credential.",
        discussion: """
            Replaces the credential's blob and keeps every other entry. A blob on standard input \
            (-) cannot be combined with --pin-stdin. With --json: {device, credentialId, rpId, size}.
            """)

    @OptionGroup var options: LargeBlobOptions
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The credential ID (base64url).", valueName: "id"))
    var credential: String
    @Option(name: .long, help: ArgumentHelp("The credential's relying party (binds the PIN token to it).", valueName: "rp-id"))
    var rp: String?
    @Flag(name: .long, help: "Replace a corrupted large-blob array (its other content is lost).")
    var force = false
    @Argument(help: ArgumentHelp("The file to store, or - for standard input.", valueName: "file"))
    var file: String
    var wantsJSON: Bool { options.global.json }

    func validate() throws {
        if file == "-" && options.pinStdin {
            throw ValidationError("Standard input cannot carry both the blob (-) and the PIN (--pin-stdin).")
        }
    }

    /// The blob to store, from --file (`-`: standard input), at most a large-blob entry's size.
    func blobInput() throws -> [UInt8] {
        let limit = LargeBlobEntry.maxOriginalSize
        return try readInput(
            file, limit: limit,
            tooLarge: CLIError(.failure, code: "large-blob-storage-full", "The blob is larger than \(limit) bytes."))
    }

    func execute() async throws {
        let id = try credentialID(credential)
        let data = try blobInput()
        let interaction = options.interaction()
        try await withAuthenticator(options.global) { key, deadline in
            let written: LargeBlobCredential
            do {
                written = try await key.setLargeBlob(
                    data, credentialID: id, rpID: rp, force: force, interaction: interaction, deadline: deadline)
            } catch {
                throw interaction.explain(error)
            }
            if wantsJSON {
                Console.json(
                    .members([
                        ("device", .string(key.uri)), ("credentialId", .string(credential)),
                        ("rpId", .string(written.rpID)), ("size", .integer(Int64(data.count))),
                    ]))
            } else {
                Console.out("Stored \(data.count) bytes as the large blob of \(credential) (\(written.rpID)).")
            }
        }
    }
}

struct LargeBlobDeleteCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete the large blob of a credential (asks first).",
        discussion: "Removes only the entries that decrypt with the credential's key. With --json: {device, credentialId, removed}.")

    @OptionGroup var options: LargeBlobOptions
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The credential ID (base64url).", valueName: "id"))
    var credential: String
    @Option(name: .long, help: ArgumentHelp("The credential's relying party (binds the PIN token to it).", valueName: "rp-id"))
    var rp: String?
    @Flag(name: .long, help: "Replace a corrupted large-blob array with an empty one.")
    var force = false
    @Flag(name: .long, help: "Do not ask for confirmation.")
    var yes = false
    var wantsJSON: Bool { options.global.json }

    func execute() async throws {
        let id = try credentialID(credential)
        let interaction = options.interaction()
        try await withAuthenticator(options.global) { key, deadline in
            let aaguid = await key.info.aaguid.description.lowercased()
            try Confirmation.ask(
                "Delete the large blob of credential \(credential) from \(await key.identification)?", assumeYes: yes)
            try await key.reidentify(as: aaguid, deadline: deadline)
            let removed: Int
            do {
                removed = try await key.deleteLargeBlob(
                    credentialID: id, rpID: rp, force: force, interaction: interaction, deadline: deadline)
            } catch {
                throw interaction.explain(error)
            }
            if wantsJSON {
                Console.json(
                    .members([
                        ("device", .string(key.uri)), ("credentialId", .string(credential)),
                        ("removed", .integer(Int64(removed))),
                    ]))
            } else if removed == 0 {
                Console.out("The credential \(credential) had no large blob.")
            } else {
                Console.out("The large blob of \(credential) is deleted.")
            }
        }
    }
}
