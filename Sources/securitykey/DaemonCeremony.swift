import _SecurityKeyInternals
import ArgumentParser
import Foundation
import SDBus
import SecurityKeys
import Synchronization

/// `--via-daemon` and `--bus-address`: route a registration or sign-in through a running
/// securitykeyd instead of opening the keys here.
struct DaemonRouteOptions: ParsableArguments {
    @Flag(
        name: .long,
        help:
            "Send the ceremony to a running securitykeyd (session bus, or --bus-address) instead of opening the keys."
    )
    var viaDaemon = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The D-Bus address of the bus securitykeyd is on (with --via-daemon).", valueName: "address"))
    var busAddress: String?

    func validate() throws {
        if busAddress != nil, !viaDaemon { throw ValidationError("--bus-address needs --via-daemon.") }
    }

    /// The daemon chooses among its keys (by touch): a `--device` cannot be honoured.
    func check(device: String?) throws {
        if viaDaemon, device != nil {
            throw CLIError.usage(
                "--via-daemon excludes --device: the daemon uses the key touched among its own.")
        }
    }
}

/// A ceremony performed by securitykeyd over D-Bus (Docs/Daemon.md): the request goes as WebAuthn
/// JSON options with its origin, StateChanged signals are followed (prompts on standard error,
/// the PIN asked through the CLI's PIN source and given with EnterClientPin, the first account
/// chosen with SelectCredential, as without the daemon), and the daemon's response JSON comes
/// back as the provider's registration or assertion, so the commands print the same output.
enum DaemonCeremony {
    static let name = "org.securitykey.Daemon1"
    static let path = "/org/securitykey/Daemon1"
    static let interface = "org.securitykey.Daemon1"

    /// Registers through the daemon.
    static func register(
        _ request: SecurityKeyCredentialRegistrationRequest, route: DaemonRouteOptions, pinReader: PINReader
    ) async throws -> SecurityKeyCredentialRegistration {
        var publicKey: [String: Any] = [
            "rp": [
                "id": request.relyingPartyIdentifier,
                "name": request.relyingPartyName ?? request.relyingPartyIdentifier,
            ],
            "user": [
                "id": Base64URL.encode(request.userID), "name": request.name,
                "displayName": request.displayName,
            ],
            "challenge": Base64URL.encode(request.challenge),
            "pubKeyCredParams": request.credentialParameters.map {
                ["type": "public-key", "alg": $0.rawValue]
            },
            "excludeCredentials": request.excludedCredentials.map(descriptor),
            "authenticatorSelection": [
                "residentKey": request.residentKeyPreference.rawValue,
                "requireResidentKey": request.residentKeyPreference == .required,
                "userVerification": request.userVerificationPreference.rawValue,
            ],
            "attestation": request.attestationPreference.rawValue,
        ]
        publicKey["timeout"] = milliseconds(request.timeout)
        publicKey["extensions"] = try extensionsJSON(request)
        let (json, device) = try await perform(
            "CreateCredential", origin: try origin(request.clientData), options: publicKey,
            timeout: request.timeout, route: route, pinReader: pinReader)
        let object = try parse(json)
        let response = try member(object, "response") as [String: Any]
        let transports = (response["transports"] as? [String] ?? []).map(SecurityKeyTransport.init(rawValue:))
        var registration = SecurityKeyCredentialRegistration(
            credentialID: try bytes(object, "rawId"),
            rawAttestationObject: try bytes(response, "attestationObject"),
            rawClientDataJSON: try bytes(response, "clientDataJSON"), transports: transports,
            deviceURI: device ?? "securitykeyd")
        try applyOutputs(object, to: &registration)
        return registration
    }

    /// Signs in through the daemon.
    static func authenticate(
        _ request: SecurityKeyCredentialAssertionRequest, route: DaemonRouteOptions, pinReader: PINReader
    ) async throws -> SecurityKeyCredentialAssertion {
        var publicKey: [String: Any] = [
            "rpId": request.relyingPartyIdentifier, "challenge": Base64URL.encode(request.challenge),
            "allowCredentials": request.allowedCredentials.map(descriptor),
            "userVerification": request.userVerificationPreference.rawValue,
        ]
        publicKey["timeout"] = milliseconds(request.timeout)
        publicKey["extensions"] = try extensionsJSON(request)
        let (json, device) = try await perform(
            "GetCredential", origin: try origin(request.clientData), options: publicKey,
            timeout: request.timeout,
            route: route, pinReader: pinReader)
        let object = try parse(json)
        let response = try member(object, "response") as [String: Any]
        var userHandle: [UInt8]?
        if response["userHandle"] is String { userHandle = try bytes(response, "userHandle") }
        var assertion = SecurityKeyCredentialAssertion(
            credentialID: try bytes(object, "rawId"),
            rawAuthenticatorData: try bytes(response, "authenticatorData"),
            signature: try bytes(response, "signature"), userID: userHandle,
            rawClientDataJSON: try bytes(response, "clientDataJSON"), appID: false,
            deviceURI: device ?? "securitykeyd")
        try applyOutputs(object, to: &assertion)
        return assertion
    }

    /// The origin and top origin (empty for a top-level request) the daemon builds the client data from.
    static func origin(_ clientData: SecurityKeyClientData) throws -> (String, String) {
        guard case .origin(let origin, _, let topOrigin) = clientData else {
            throw CLIError.usage(
                "--via-daemon needs an origin (the daemon builds the client data), not --client-data-hash.")
        }
        return (origin, topOrigin ?? "")
    }

    static func descriptor(_ credential: SecurityKeyCredentialDescriptor) -> [String: Any] {
        var entry: [String: Any] = ["type": "public-key", "id": Base64URL.encode(credential.credentialID)]
        if !credential.transports.isEmpty { entry["transports"] = credential.transports.map(\.rawValue) }
        return entry
    }

    static func milliseconds(_ duration: Duration) -> Int {
        Int(
            clamping: duration.components.seconds * 1000 + duration.components.attoseconds
                / 1_000_000_000_000_000)
    }

    // MARK: The daemon's answer (hostile until checked)

    static func malformed(_ what: String) -> CLIError {
        CLIError(.failure, code: "malformed-response", "securitykeyd's response \(what).")
    }

    static func parse(_ json: String) throws -> [String: Any] {
        guard json.utf8.count <= 1 << 20,
            let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any]
        else { throw malformed("is not a JSON object") }
        return object
    }

    static func member<T>(_ object: [String: Any], _ key: String) throws -> T {
        guard let value = object[key] as? T else { throw malformed("has no valid \(key)") }
        return value
    }

    static func bytes(_ object: [String: Any], _ key: String) throws -> [UInt8] {
        guard let text = object[key] as? String, let bytes = Base64URL.decode(text) else {
            throw malformed("has no base64url \(key)")
        }
        return bytes
    }

    // MARK: The call and its StateChanged signals

    /// What the signal follower learned: the request ID, and the key used.
    final class Progress: Sendable {
        let state = Mutex<(serial: UInt64?, requestID: String?, device: String?)>((nil, nil, nil))
    }

    /// Calls `method` with the options and follows the request's signals until the reply;
    /// returns the response JSON and the key's URI (from CONNECTED).
    static func perform(
        _ method: String, origin: (String, String), options: [String: Any], timeout: Duration,
        route: DaemonRouteOptions,
        pinReader: PINReader
    ) async throws -> (String, String?) {
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: ["publicKey": options], options: [.sortedKeys, .withoutEscapingSlashes])
        else { throw CLIError.invalidInput("The options cannot be written as JSON.") }
        let place = route.busAddress.map { "the bus at \($0)" } ?? "the session bus"
        let bus: BusConnection
        do {
            bus = try await BusConnection.client(
                address: route.busAddress.map(BusAddress.address) ?? .session)
        } catch {
            throw CLIError(.noDevice, code: "no-daemon", "Cannot reach \(place): \(error.message)")
        }
        defer { bus.close() }
        // Who owns the name (started by bus activation when it is not running; the bus daemon
        // only answers StartServiceByName for names with a service file): only its signals are believed.
        let owner: String
        if let running = try await nameOwner(bus, place: place) {
            owner = running
        } else {
            let started = try await call(
                bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "StartServiceByName",
                [.string(name), .uint32(0)], place: place)
            if case .error(_, let message) = started {
                throw CLIError(
                    .noDevice, code: "no-daemon", "securitykeyd is not running on \(place): \(message)")
            }
            guard let running = try await nameOwner(bus, place: place) else {
                throw CLIError(.noDevice, code: "no-daemon", "securitykeyd is not running on \(place).")
            }
            owner = running
        }
        do { try await bus.watchSignals(path: path, interface: interface) } catch {
            throw CLIError(.failure, code: "dbus", error.message)
        }

        let progress = Progress()
        let interaction = CLIInteraction(reader: pinReader)
        let reply: BusReply = try await withThrowingTaskGroup(of: BusReply?.self) { group in
            group.addTask {
                await follow(bus.events, owner: owner, progress: progress, interaction: interaction, bus: bus)
                return nil
            }
            group.addTask {
                try await call(
                    bus, name, path, interface, method,
                    [.string(origin.0), .string(origin.1), .string(String(decoding: data, as: UTF8.self))],
                    timeout: timeout + .seconds(30), place: place
                ) { serial in progress.state.withLock { $0.serial = serial } }
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let next { return next }
            }
            throw malformed("never came")
        }
        switch reply {
        case .values(let values):
            guard let json = values.first?.stringValue else { throw malformed("is not a string") }
            return (json, progress.state.withLock { $0.device })
        case .error(let name, let message):
            if let reason = interaction.unanswered { throw reason }
            throw error(name: name, message: message)
        }
    }

    /// The unique name owning the daemon's name, or nil when nobody owns it.
    static func nameOwner(_ bus: BusConnection, place: String) async throws -> String? {
        let reply = try await call(
            bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
            [.string(name)], place: place)
        guard case .values(let values) = reply else { return nil }
        guard let unique = values.first?.stringValue, unique.hasPrefix(":") else {
            throw malformed("names no owner")
        }
        return unique
    }

    static func call(
        _ bus: BusConnection, _ destination: String, _ path: String, _ interface: String, _ member: String,
        _ values: [BusValue], timeout: Duration = .seconds(25), place: String,
        sent: @escaping @Sendable (UInt64) -> Void = { _ in }
    ) async throws -> BusReply {
        do {
            return try await bus.call(
                destination: destination, path: path, interface: interface, member: member, values,
                timeout: timeout,
                sent: sent)
        } catch {
            throw CLIError(
                .failure, code: "dbus", "The call to \(member) on \(place) failed: \(error.message)")
        }
    }

    /// The daemon's WebAuthn error as the CLI's exit statuses say it.
    static func error(name: String, message: String) -> CLIError {
        let webAuthnName =
            name.hasPrefix(interface + ".Error.") ? String(name.dropFirst(interface.count + 7)) : name
        let (status, code): (CLIExitStatus, String) =
            switch webAuthnName {
            case "AbortError": (.cancelled, "daemon-abort")
            case "NotAllowedError": (message.contains("PIN") ? .pinProblem : .cancelled, "daemon-not-allowed")
            case "NotSupportedError": (.notSupported, "daemon-not-supported")
            case "TypeError": (.usage, "daemon-type-error")
            case "SecurityError": (.usage, "daemon-security-error")
            case "InvalidStateError": (.failure, "daemon-invalid-state")
            case "org.freedesktop.DBus.Error.NoReply": (.cancelled, "daemon-no-reply")
            default: (.failure, "daemon-error")
            }
        // The code is kebab-case like every other; the daemon's WebAuthn name stays in the message.
        return CLIError(status, code: code, "securitykeyd (\(webAuthnName)): \(message)")
    }

    /// Follows StateChanged from the daemon (`owner`) for this call's request until cancelled.
    static func follow(
        _ events: AsyncStream<BusEvent>, owner: String, progress: Progress, interaction: CLIInteraction,
        bus: BusConnection
    ) async {
        let prompt = TouchPrompt()
        for await event in events {
            guard case .signal(let signal) = event, signal.sender == owner, signal.member == "StateChanged",
                signal.arguments.count == 3, let id = signal.arguments[0].stringValue,
                let state = signal.arguments[1].stringValue,
                case .dictionary(let details) = signal.arguments[2]
            else { continue }
            func detail(_ key: String) -> BusValue? { details.first { $0.key == key }?.value }
            if state == "STARTED", case .uint64(let serial) = detail("call_serial") {
                progress.state.withLock { if $0.serial == serial { $0.requestID = id } }
            }
            guard progress.state.withLock({ $0.requestID }) == id else { continue }
            switch state {
            case "WAITING": Console.err("Insert or tap a security key.")
            case "SELECTING_DEVICE":
                if case .int32(let count) = detail("count") {
                    Console.err("\(count) security keys found: touch the one to use.")
                }
            case "CONNECTED":
                if case .string(let uri) = detail("device") { progress.state.withLock { $0.device = uri } }
            case "NEEDS_USER_PRESENCE": prompt.keepalive(.userPresenceNeeded)
            case "NEEDS_PIN":
                var left: Int?
                if case .int32(let number) = detail("attempts_left"), number >= 0 { left = Int(number) }
                let device = progress.state.withLock { $0.device } ?? "securitykeyd"
                // The PIN goes to the daemon only, for this request; a PIN source that gives none cancels.
                if let pin = await interaction.pin(deviceURI: device, attemptsLeft: left) {
                    _ = try? await bus.call(
                        destination: name, path: path, interface: interface, member: "EnterClientPin",
                        [.string(id), .string(pin)])
                } else {
                    _ = try? await bus.call(
                        destination: name, path: path, interface: interface, member: "CancelRequest",
                        [.string(id)])
                }
            case "SELECT_CREDENTIAL":
                guard case .string(let list) = detail("credentials"), list.utf8.count <= 1 << 20,
                    let accounts = (try? JSONSerialization.jsonObject(with: Data(list.utf8)))
                        as? [[String: Any]],
                    let first = accounts.first?["id"] as? String
                else { continue }
                let name = accounts.first.flatMap {
                    ($0["name"] as? String) ?? ($0["displayName"] as? String)
                }
                Console.err(
                    "The key holds \(accounts.count) accounts for this site; signing in as \(name ?? "the first account")."
                )
                _ = try? await bus.call(
                    destination: Self.name, path: path, interface: interface, member: "SelectCredential",
                    [.string(id), .string(first)])
            default: break
            }
        }
    }
}
