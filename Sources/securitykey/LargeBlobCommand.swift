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

    @OptionGroup var options: CredentialsOptions
    @Flag(name: .long, help: "Do not read the credentials' largeBlobKeys (no PIN is asked).")
    var noCredentials = false
    var wantsJSON: Bool { options.global.json }

    func execute() async throws {
        let interaction = options.interaction()
        let skipKeys = noCredentials
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            let inventory = try await key.largeBlobInventory(matchingCredentials: !skipKeys, interaction: interaction, deadline: deadline)
            if wantsJSON { return Console.json(inventory.json(device: key.uri)) }
            warnCorrupted(inventory.reading.corruption)
            Console.out(
                "Large-blob array: \(inventory.reading.serializedLength) of \(inventory.maxSize) bytes, \(inventory.entries.count) entries.")
            for row in inventory.entries { Console.out(row.summary) }
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

    @OptionGroup var options: CredentialsOptions
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
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            let found = try await key.largeBlob(credentialID: id, rpID: rp, interaction: interaction, deadline: deadline)
            let data = try found.lookup.requireData(credential: credential)
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
                        ("corrupted", found.lookup.corruption?.json ?? .null),
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

    @OptionGroup var options: CredentialsOptions
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
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            let written = try await key.setLargeBlob(
            data, credentialID: id, rpID: rp, force: force, interaction: interaction, deadline: deadline)
            Console.result(
                json: wantsJSON,
                .members([
                    ("device", .string(key.uri)), ("credentialId", .string(credential)),
                    ("rpId", .string(written.rpID)), ("size", .integer(Int64(data.count))),
                ]),
                "Stored \(data.count) bytes as the large blob of \(credential) (\(written.rpID)).")
        }
    }
}

struct LargeBlobDeleteCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete the large blob of a credential (asks first).",
        discussion: "Removes only the entries that decrypt with the credential's key. With --json: {device, credentialId, removed}.")

    @OptionGroup var options: CredentialsOptions
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
        try await withAuthenticator(options.global, explaining: interaction) { key, deadline in
            try await Confirmation.ask(about: key, assumeYes: yes, deadline: deadline) {
                "Delete the large blob of credential \(credential) from \($0)?"
            }
            let removed = try await key.deleteLargeBlob(
            credentialID: id, rpID: rp, force: force, interaction: interaction, deadline: deadline)
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
