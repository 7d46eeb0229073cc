import _SecurityKeyInternals
import CBOR
import FoundationEssentials
import SDBus
import SecurityKeys
import Synchronization

/// A client of securitykeyd (Docs/Daemon.md): a ceremony performed by the daemon over D-Bus.
/// The request goes as WebAuthn JSON options with its origin; the request's StateChanged
/// signals are followed (statuses reported to `onStatus`, the PIN asked of the interaction and
/// given with EnterClientPin, the account chosen by the interaction given with
/// SelectCredential); and the daemon's response JSON comes back as the provider's registration
/// or assertion, so a caller handles it as it would a ceremony run in-process.
///
/// The daemon's answer is hostile until checked: every member is type-checked, and a wrong
/// type is a ``SecurityKeyDaemonClientError/Code/malformedResponse`` error naming it.
public struct SecurityKeyDaemonClient: Sendable {
    static let name = SecurityKeyDaemonBus.busName
    static let path = SecurityKeyDaemonBus.objectPath
    static let interface = SecurityKeyDaemonBus.interface

    /// The D-Bus address of the bus the daemon is on; nil for the session bus.
    public var busAddress: String?
    /// The caller's PIN and account choices.
    public var interaction: any SecurityKeyInteraction
    /// Receives the request's progress (no key yet, several keys blink, a touch is needed ...).
    public var onStatus: @Sendable (SecurityKeyStatus) -> Void

    /// A client of the daemon on `busAddress` (nil: the session bus).
    public init(
        busAddress: String? = nil, interaction: any SecurityKeyInteraction,
        onStatus: @escaping @Sendable (SecurityKeyStatus) -> Void = { _ in }
    ) {
        self.busAddress = busAddress
        self.interaction = interaction
        self.onStatus = onStatus
    }

    /// Registers through the daemon.
    public func register(
        _ request: SecurityKeyCredentialRegistrationRequest
    ) async throws(SecurityKeyDaemonClientError) -> SecurityKeyCredentialRegistration {
        let publicKey: [String: Any] = [
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
            "excludeCredentials": request.excludedCredentials.map(Self.descriptor),
            "authenticatorSelection": [
                "residentKey": request.residentKeyPreference.rawValue,
                "requireResidentKey": request.residentKeyPreference == .required,
                "userVerification": request.userVerificationPreference.rawValue,
            ],
            "attestation": request.attestationPreference.rawValue,
        ]
        let (json, device) = try await send(
            .createCredential, publicKey, extensions: try Self.extensionsJSON(request),
            clientData: request.clientData, timeout: request.timeout)
        return try Self.registration(responseJSON: json, deviceURI: device)
    }

    /// Signs in through the daemon.
    public func authenticate(
        _ request: SecurityKeyCredentialAssertionRequest
    ) async throws(SecurityKeyDaemonClientError) -> SecurityKeyCredentialAssertion {
        let publicKey: [String: Any] = [
            "rpId": request.relyingPartyIdentifier, "challenge": Base64URL.encode(request.challenge),
            "allowCredentials": request.allowedCredentials.map(Self.descriptor),
            "userVerification": request.userVerificationPreference.rawValue,
        ]
        let (json, device) = try await send(
            .getCredential, publicKey, extensions: try Self.extensionsJSON(request),
            clientData: request.clientData, timeout: request.timeout)
        return try Self.assertion(responseJSON: json, deviceURI: device)
    }

    /// Sends `options` with the request's timeout and extensions; returns the response JSON
    /// and the URI of the key used (`securitykeyd` when the daemon named none).
    func send(
        _ method: SecurityKeyDaemonBus.Method, _ options: [String: Any], extensions: [String: Any]?,
        clientData: SecurityKeyClientData, timeout: Duration
    ) async throws(SecurityKeyDaemonClientError) -> (json: String, deviceURI: String) {
        var options = options
        options["timeout"] = Self.milliseconds(timeout)
        options["extensions"] = extensions
        let (json, device) = try await perform(
            method, origin: try Self.origin(clientData), options: options, timeout: timeout)
        return (json, device ?? "securitykeyd")
    }

    /// The origin and top origin (empty for a top-level request) the daemon builds the client data from.
    static func origin(_ clientData: SecurityKeyClientData) throws(SecurityKeyDaemonClientError) -> (String, String) {
        guard case .origin(let origin, _, let topOrigin) = clientData else {
            throw SecurityKeyDaemonClientError(
                .notExpressible, "The daemon builds the client data from an origin; a client data hash alone cannot be sent.",
                reason: .clientDataHash)
        }
        return (origin, topOrigin ?? "")
    }

    static func descriptor(_ credential: SecurityKeyCredentialDescriptor) -> [String: Any] {
        var entry: [String: Any] = ["type": "public-key", "id": Base64URL.encode(credential.credentialID)]
        if !credential.transports.isEmpty { entry["transports"] = credential.transports.map(\.rawValue) }
        return entry
    }

    /// The options as JSON, members sorted by name: strings, booleans, integers, arrays and
    /// objects of them (what this client builds); nil for anything else.
    static func json(_ value: Any) -> JSONValue? {
        switch value {
        case let text as String: return .string(text)
        case let flag as Bool: return .bool(flag)
        case let number as Int: return .integer(Int64(number))
        case let number as Int64: return .integer(number)
        case let list as [Any]:
            var items: [JSONValue] = []
            for item in list {
                guard let item = json(item) else { return nil }
                items.append(item)
            }
            return .array(items)
        case let object as [String: Any]:
            var members: [(String, JSONValue)] = []
            for (name, item) in object.sorted(by: { $0.key < $1.key }) {
                guard let item = json(item) else { return nil }
                members.append((name, item))
            }
            return .object(members)
        default: return nil
        }
    }

    static func milliseconds(_ duration: Duration) -> Int {
        Int(
            clamping: duration.components.seconds * 1000 + duration.components.attoseconds
                / 1_000_000_000_000_000)
    }

    // MARK: The call and its StateChanged signals

    /// What the signal follower learned: the request ID, and the key used.
    final class Progress: Sendable {
        let state = Mutex<(serial: UInt64?, requestID: String?, device: String?)>((nil, nil, nil))
    }

    /// Calls `method` with the options and follows the request's signals until the reply;
    /// returns the response JSON and the key's URI (from CONNECTED).
    func perform(
        _ method: SecurityKeyDaemonBus.Method, origin: (String, String), options: [String: Any], timeout: Duration
    ) async throws(SecurityKeyDaemonClientError) -> (String, String?) {
        guard let document = Self.json(["publicKey": options]) else {
            throw SecurityKeyDaemonClientError(.invalidInput, "The options cannot be written as JSON.")
        }
        let data = Array(document.text().utf8)
        let place = busAddress.map { "the bus at \($0)" } ?? "the session bus"
        let bus: BusConnection
        do {
            bus = try await BusConnection.client(address: busAddress.map(BusAddress.address) ?? .session)
        } catch {
            throw SecurityKeyDaemonClientError(.noDaemon, "Cannot reach \(place): \(error.message)")
        }
        defer { bus.close() }
        // Who owns the name (started by bus activation when it is not running; the bus daemon
        // only answers StartServiceByName for names with a service file): only its signals are believed.
        let owner: String
        if let running = try await Self.nameOwner(bus, place: place) {
            owner = running
        } else {
            let started = try await Self.call(
                bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "StartServiceByName",
                [.string(Self.name), .uint32(0)], place: place)
            if case .error(_, let message) = started {
                throw SecurityKeyDaemonClientError(.noDaemon, "securitykeyd is not running on \(place): \(message)")
            }
            guard let running = try await Self.nameOwner(bus, place: place) else {
                throw SecurityKeyDaemonClientError(.noDaemon, "securitykeyd is not running on \(place).")
            }
            owner = running
        }
        do { try await bus.watchSignals(path: Self.path, interface: Self.interface) } catch {
            throw SecurityKeyDaemonClientError(.dbus, error.message)
        }

        let progress = Progress()
        let result: Result<BusReply, SecurityKeyDaemonClientError> = await withTaskGroup(
            of: Result<BusReply, SecurityKeyDaemonClientError>?.self
        ) { group in
            group.addTask {
                await follow(bus.events, owner: owner, progress: progress, bus: bus)
                return nil
            }
            group.addTask {
                do throws(SecurityKeyDaemonClientError) {
                    return .success(
                        try await Self.call(
                            bus, Self.name, Self.path, Self.interface, method.rawValue,
                            [.string(origin.0), .string(origin.1), .string(String(decoding: data, as: UTF8.self))],
                            timeout: timeout + .seconds(30), place: place
                        ) { serial in progress.state.withLock { $0.serial = serial } })
                } catch { return .failure(error) }
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return .failure(Self.malformed("never came"))
        }
        switch try result.get() {
        case .values(let values):
            guard let json = values.first?.stringValue else { throw Self.malformed("is not a string") }
            return (json, progress.state.withLock { $0.device })
        case .error(let name, let message):
            throw Self.error(name: name, message: message)
        }
    }

    /// A reply that is not what securitykeyd sends: `what` says how.
    static func malformed(_ what: String) -> SecurityKeyDaemonClientError {
        SecurityKeyDaemonClientError(.malformedResponse, "securitykeyd's response \(what).")
    }

    /// The unique name owning the daemon's name, or nil when nobody owns it.
    static func nameOwner(_ bus: BusConnection, place: String) async throws(SecurityKeyDaemonClientError) -> String? {
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
    ) async throws(SecurityKeyDaemonClientError) -> BusReply {
        do {
            return try await bus.call(
                destination: destination, path: path, interface: interface, member: member, values,
                timeout: timeout,
                sent: sent)
        } catch {
            throw SecurityKeyDaemonClientError(.dbus, "The call to \(member) on \(place) failed: \(error.message)")
        }
    }

    /// The daemon's D-Bus error, its WebAuthn name kept in the message.
    static func error(name: String, message: String) -> SecurityKeyDaemonClientError {
        let webAuthnName =
            name.hasPrefix(SecurityKeyDaemonBus.errorPrefix)
            ? String(name.dropFirst(SecurityKeyDaemonBus.errorPrefix.count)) : name
        let code: SecurityKeyDaemonClientError.Code =
            switch webAuthnName {
            case SecurityKeyDaemonBus.ErrorName.abort.rawValue: .daemonAbort
            case SecurityKeyDaemonBus.ErrorName.notAllowed.rawValue: .daemonNotAllowed
            case SecurityKeyDaemonBus.ErrorName.notSupported.rawValue: .daemonNotSupported
            case SecurityKeyDaemonBus.ErrorName.type.rawValue: .daemonTypeError
            case SecurityKeyDaemonBus.ErrorName.security.rawValue: .daemonSecurityError
            case SecurityKeyDaemonBus.ErrorName.invalidState.rawValue: .daemonInvalidState
            case "org.freedesktop.DBus.Error.NoReply": .daemonNoReply
            default: .daemonError
            }
        // The code is kebab-case like every other; the daemon's WebAuthn name stays in the message.
        return SecurityKeyDaemonClientError(
            code, "securitykeyd (\(webAuthnName)): \(message)", daemonErrorName: webAuthnName)
    }

    /// Follows StateChanged from the daemon (`owner`) for this call's request until cancelled.
    func follow(_ events: AsyncStream<BusEvent>, owner: String, progress: Progress, bus: BusConnection) async {
        for await event in events {
            guard case .signal(let signal) = event, signal.sender == owner,
                signal.member == SecurityKeyDaemonBus.stateChanged,
                signal.arguments.count == 3, let id = signal.arguments[0].stringValue,
                let stateName = signal.arguments[1].stringValue,
                case .dictionary(let details) = signal.arguments[2]
            else { continue }
            let state = SecurityKeyDaemonBus.State(rawValue: stateName)
            func detail(_ key: String) -> BusValue? { details.first { $0.key == key }?.value }
            func attemptsLeft() -> Int? {
                if case .int32(let number) = detail("attempts_left"), number >= 0 { return Int(number) }
                return nil
            }
            if state == .started, case .uint64(let serial) = detail("call_serial") {
                progress.state.withLock { if $0.serial == serial { $0.requestID = id } }
            }
            guard progress.state.withLock({ $0.requestID }) == id else { continue }
            let device = progress.state.withLock { $0.device } ?? "securitykeyd"
            switch state {
            case .waiting: onStatus(.waitingForKey)
            case .selectingDevice:
                if case .int32(let count) = detail("count") { onStatus(.selectingKey(count: Int(count))) }
            case .connected:
                if case .string(let uri) = detail("device") {
                    progress.state.withLock { $0.device = uri }
                    onStatus(.keySelected(deviceURI: uri))
                }
            case .needsUserPresence:
                var uri = device
                if case .string(let named) = detail("device") { uri = named }
                onStatus(.touchNeeded(deviceURI: uri))
            case .needsUserVerification: onStatus(.userVerificationRetry(attemptsLeft: attemptsLeft()))
            case .needsPIN:
                let left = attemptsLeft()
                onStatus(.pinNeeded(attemptsLeft: left))
                // The PIN goes to the daemon only, for this request; an interaction that gives none cancels.
                if let pin = await interaction.pin(deviceURI: device, attemptsLeft: left) {
                    _ = try? await bus.call(
                        destination: Self.name, path: Self.path, interface: Self.interface,
                        member: SecurityKeyDaemonBus.Method.enterClientPin.rawValue, [.string(id), .string(pin)])
                } else {
                    await cancel(id, bus: bus)
                }
            case .selectCredential:
                guard case .string(let list) = detail("credentials"),
                    let offered = Self.accounts(offeredIn: list), !offered.isEmpty
                else { continue }
                onStatus(.selectingAccount(count: offered.count))
                if let index = await interaction.chooseAccount(offered.map(\.account)), offered.indices.contains(index) {
                    _ = try? await bus.call(
                        destination: Self.name, path: Self.path, interface: Self.interface,
                        member: SecurityKeyDaemonBus.Method.selectCredential.rawValue,
                        [.string(id), .string(offered[index].id)])
                } else {
                    await cancel(id, bus: bus)
                }
            default: break
            }
        }
    }

    /// Asks the daemon to end the request.
    func cancel(_ id: String, bus: BusConnection) async {
        _ = try? await bus.call(
            destination: Self.name, path: Self.path, interface: Self.interface,
            member: SecurityKeyDaemonBus.Method.cancelRequest.rawValue, [.string(id)])
    }
}
