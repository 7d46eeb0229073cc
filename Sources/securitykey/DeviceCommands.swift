import _SecurityKeyInternals
import ArgumentParser
import Authenticators
import CBOR
import CTAP2
import Transport

/// `securitykey list`: every key on every transport.
struct ListCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List every security key present (USB HID, PC/SC, UDP emulators).",
        discussion: """
            With --json, prints an array with one object per key: uri (what --device takes), transport, \
            vendorId, productId, manufacturer, product, serialNumber, aaguid, versions.
            """)

    @OptionGroup var global: GlobalOptions
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        let logger = global.makeLogger()
        let directory = try global.directory(logger: logger)
        var keys: [AuthenticatorDirectory.Listing]
        if let uri = global.device {
            // --device narrows the list to that key, and fails when it is not there.
            keys = [try await directory.list(uri: uri, deadline: global.deadline())]
        } else {
            keys = await directory.list(deadline: global.deadline())
        }
        if global.json {
            Console.json(.array(keys.map { $0.json(model: $0.info.flatMap { MDSCLI.modelName(aaguid: $0.aaguid) }) }))
            return
        }
        if keys.isEmpty {
            Console.err("No security key found.")
            return
        }
        for key in keys { Console.out(key.summary(model: key.info.flatMap { MDSCLI.modelName(aaguid: $0.aaguid) })) }
    }
}

/// `securitykey info`: getInfo and PIN state, in words or JSON.
struct InfoCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show everything the key reports (authenticatorGetInfo), with its PIN state.",
        discussion: """
            With --json, prints the getInfo members under the CTAP specification's names (versions, \
            extensions, aaguid, options, maxMsgSize, pinUvAuthProtocols, ...) plus device, pinRetries, \
            powerCycleRequired and uvRetries beside them.
            """)

    @OptionGroup var global: GlobalOptions
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        try await withAuthenticator(global) { key, deadline in
            let details = await key.details(tokenStore: StoredTokens.store, events: StoredTokens.tell(key), deadline: deadline)
            let info = details.info
            if global.json { return Console.json(details.json(device: key.uri, model: MDSCLI.modelName(aaguid: info.aaguid))) }
            Console.out("Device:          \(key.uri)")
            if let model = MDSCLI.modelName(aaguid: info.aaguid) { Console.out("Model:           \(model) (FIDO metadata)") }
            if info.isU2FOnly {
                Console.out("Protocol:        CTAP1/U2F only (no CTAP2): used through U2F, without PIN or discoverable credentials")
            }
            for line in info.summaryLines { Console.out(line) }
            if let retries = details.pinRetries {
                var line = "PIN retries:     \(retries.retries) attempt(s) left"
                if retries.powerCycleRequired == true {
                    line += "; remove and re-insert the key before the next try"
                }
                Console.out(line)
            }
            if let uvRetries = details.uvRetries { Console.out("UV retries:      \(uvRetries)") }
            if let identifier = details.identifierHex {
                Console.out("Identifier:      \(identifier) (decrypted with the stored token)")
            }
        }
    }
}

/// `securitykey wink`: make the key blink, or every key.
struct WinkCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "wink", abstract: "Make the key blink, to find it among several (USB HID only).",
        discussion: """
            With --all every key present blinks at once, each named on its own line (with --json, an \
            array of {device, winked, error}); the status is 0 when at least one blinked.
            """)

    @OptionGroup var global: GlobalOptions
    @Flag(name: .long, help: "Blink every key present, not just one.")
    var all = false
    var wantsJSON: Bool { global.json }

    func validate() throws {
        if all, global.device != nil { throw ValidationError("--all blinks every key; it takes no --device.") }
    }

    func execute() async throws {
        guard all else {
            return try await withAuthenticator(global) { key, _ in
                try await key.wink()
                Console.result(
                    json: global.json, .object([("device", .string(key.uri)), ("winked", true)]),
                    "The key at \(key.uri) blinked.")
            }
        }
        let directory = try global.directory(logger: global.makeLogger())
        let (winks, denied) = await directory.winkAll(deadline: global.deadline())
        guard !winks.isEmpty else {
            if let denied { throw denied }
            throw CLIError(.noDevice, code: "no-device", "No security key found; plug one in.")
        }
        let results: [(String, CLIError?)] = winks.map { ($0.uri, $0.failure.map { CLIError($0) }) }
        if global.json {
            Console.json(
                .array(
                    results.map { uri, error in
                        .object([("device", .string(uri)), ("winked", .bool(error == nil)), ("error", error?.json ?? .null)])
                    }))
        } else {
            for (uri, error) in results {
                Console.out(error.map { "The key at \(uri) did not blink: \($0.message)" } ?? "The key at \(uri) blinked.")
            }
        }
        if let failure = results.compactMap(\.1).first, !results.contains(where: { $0.1 == nil }) { throw failure }
    }
}
