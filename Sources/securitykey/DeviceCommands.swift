import ArgumentParser
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
        let directory = DeviceDirectory(logger: global.makeLogger(), timeout: global.timeoutDuration)
        let keys = await directory.keys()
        if global.json {
            Console.json(.array(keys.map(\.json)))
            return
        }
        if keys.isEmpty {
            Console.err("No security key found.")
            return
        }
        for key in keys {
            var line = "\(key.descriptor.uri)  [\(key.descriptor.transport)]"
            if let vid = key.descriptor.vendorID, let pid = key.descriptor.productID {
                line += "  \(hex4(vid)):\(hex4(pid))"
            }
            if let product = key.descriptor.product { line += "  \(product)" }
            if let info = key.info {
                line +=
                    "  AAGUID \(info.aaguid.description.lowercased())  \(info.versions.map(\.rawValue).joined(separator: ","))"
            } else if let problem = key.problem {
                line += "  (\(problem))"
            }
            Console.out(line)
        }
    }

    private func hex4(_ v: UInt16) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }
}

extension DeviceDirectory.FoundKey {
    var json: JSONValue {
        .members([
            ("uri", .string(descriptor.uri)),
            ("transport", .string(descriptor.transport.rawValue)),
            ("vendorId", descriptor.vendorID.map { .integer(Int64($0)) } ?? .null),
            ("productId", descriptor.productID.map { .integer(Int64($0)) } ?? .null),
            ("manufacturer", descriptor.manufacturer.map(JSONValue.string) ?? .null),
            ("product", descriptor.product.map(JSONValue.string) ?? .null),
            ("serialNumber", descriptor.serialNumber.map(JSONValue.string) ?? .null),
            ("aaguid", info.map { .string($0.aaguid.description.lowercased()) } ?? .null),
            ("versions", info.map { .array($0.versions.map { .string($0.rawValue) }) } ?? .null),
            ("error", problem.map(JSONValue.string)),
        ])
    }
}

/// Opens the chosen key, runs `body` with a session, and closes the key.
func withSession<T: Sendable>(
    _ global: GlobalOptions, _ body: (CTAP2Session) async throws -> T
) async throws -> T {
    let logger = global.makeLogger()
    let directory = DeviceDirectory(logger: logger, timeout: global.timeoutDuration)
    let connection = try await directory.open(global.device)
    let session = CTAP2Session(connection: connection, defaultTimeout: global.timeoutDuration, logger: logger)
    do {
        let result = try await body(session)
        await connection.close()
        return result
    } catch {
        await connection.close()
        throw error
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
        try await withSession(global) { session in
            let info = try await session.getInfo()
            var retries: ClientPIN.PINRetries?
            var uvRetries: Int?
            if info.options[.clientPIN] != nil, let pin = try? ClientPIN(session: session, info: info) {
                retries = try? await pin.pinRetries()
                if info.options[.userVerification] != nil { uvRetries = try? await pin.uvRetries() }
            }
            if global.json {
                guard case .object(var members) = info.json else { return }
                members.insert(("device", .string(session.connection.descriptor.uri)), at: 0)
                if let retries {
                    members.append(("pinRetries", .integer(Int64(retries.retries))))
                    if let p = retries.powerCycleRequired { members.append(("powerCycleRequired", .bool(p))) }
                }
                if let uvRetries { members.append(("uvRetries", .integer(Int64(uvRetries)))) }
                Console.json(.object(members))
                return
            }
            Console.out("Device:          \(session.connection.descriptor.uri)")
            for line in info.summaryLines { Console.out(line) }
            if let retries {
                var line = "PIN retries:     \(retries.retries) attempt(s) left"
                if retries.powerCycleRequired == true {
                    line += "; remove and re-insert the key before the next try"
                }
                Console.out(line)
            }
            if let uvRetries { Console.out("UV retries:      \(uvRetries)") }
        }
    }
}

/// `securitykey wink`: make the key blink.
struct WinkCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "wink", abstract: "Make the key blink, to find it among several (USB HID only).")

    @OptionGroup var global: GlobalOptions
    var wantsJSON: Bool { global.json }

    func execute() async throws {
        try await withSession(global) { session in
            try await session.connection.wink()
            if global.json {
                Console.json(
                    .object([("device", .string(session.connection.descriptor.uri)), ("winked", true)]))
            } else {
                Console.out("The key at \(session.connection.descriptor.uri) blinked.")
            }
        }
    }
}
