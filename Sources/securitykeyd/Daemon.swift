import _SecurityKeyInternals
import FoundationEssentials
import Logging
import SDBus
import SecurityKeyDaemonClient
import SecurityKeys
import Synchronization

/// The daemon's requests: who started each, what it waits for, and the answers callers give.
///
/// Method calls arrive from the bus thread as ``BusEvent``s; CreateCredential and GetCredential
/// each run as a child task of ``serve(_:)`` and are answered when the ceremony ends, with
/// StateChanged signals to their caller meanwhile. Only the caller that started a request may
/// answer or cancel it; a caller that leaves the bus has its requests cancelled.
actor Daemon {
    /// Why a request stopped before its ceremony ended.
    enum Interruption: Sendable {
        case cancelledByCaller, callerLeft, shuttingDown, timedOut
    }

    struct Live {
        var owner: String
        var interrupt: AsyncStream<Interruption>.Continuation
        var pin: CheckedContinuation<String?, Never>?
        var account: (continuation: CheckedContinuation<Int?, Never>, accounts: [SecurityKeyAccount])?
    }

    let bus: BusConnection
    let pool: KeyPool
    let policy: CallerPolicy
    let logger: Logger
    private var live: [String: Live] = [:]
    private var stopping = false
    private var running = 0
    private var drained: [CheckedContinuation<Void, Never>] = []

    init(bus: BusConnection, pool: KeyPool, policy: CallerPolicy, logger: Logger) {
        self.bus = bus
        self.pool = pool
        self.policy = policy
        self.logger = logger
    }

    // MARK: Serving

    /// Handles the bus's events until the connection closes.
    func serve(_ events: AsyncStream<BusEvent>) async {
        await withDiscardingTaskGroup { group in
            for await event in events {
                switch event {
                case .peerLeft(let name): interruptAll(ownedBy: name, .callerLeft)
                case .signal: continue  // the daemon watches no signals but NameOwnerChanged
                case .methodCall(let call):
                    guard call.interface == DaemonInterface.interface else {
                        bus.replyError(
                            to: call, name: "org.freedesktop.DBus.Error.UnknownInterface",
                            message: "No interface \(call.interface) here.")
                        continue
                    }
                    switch call.member {
                    case SecurityKeyDaemonBus.Method.createCredential.rawValue,
                        SecurityKeyDaemonBus.Method.getCredential.rawValue:
                        guard let ceremony = begin(call) else { continue }
                        group.addTask { await self.perform(call, ceremony) }
                    case SecurityKeyDaemonBus.Method.listDevices.rawValue:
                        // The first may wait for the start-up listing; other calls go on meanwhile.
                        group.addTask { await self.handle(call) }
                    default: await handle(call)
                    }
                }
            }
        }
    }

    /// Stops taking requests, interrupts those in flight and returns once each has been answered.
    func shutdown() async {
        stopping = true
        for id in live.keys { live[id]?.interrupt.yield(.shuttingDown) }
        if running == 0 { return }
        await withCheckedContinuation { drained.append($0) }
    }

    func reply(_ call: BusMethodCall, error: DaemonError) {
        bus.replyError(to: call, name: error.busName, message: error.message)
    }

    /// The short methods, answered at once.
    func handle(_ call: BusMethodCall) async {
        if let refusal = policy.refusal(call.caller, origin: nil) {
            return reply(call, error: DaemonError(.security, refusal))
        }
        let strings = call.arguments.compactMap(\.stringValue)
        guard strings.count == call.arguments.count else {
            return reply(call, error: DaemonError(.type, "\(call.member) takes string arguments."))
        }
        switch (call.member, strings.count) {
        case (SecurityKeyDaemonBus.Method.getClientCapabilities.rawValue, 0):
            bus.reply(to: call, [.dictionary(Self.capabilities)])
        case (SecurityKeyDaemonBus.Method.listDevices.rawValue, 0):
            await pool.waitUntilEnumerated()
            let devices = await pool.list().map(Self.entries)
            bus.reply(to: call, [.dictionaries(devices)])
        case (SecurityKeyDaemonBus.Method.enterClientPin.rawValue, 2):
            // The PIN is handed to the waiting request and never logged.
            guard var request = live[strings[0]], request.owner == call.caller.uniqueName,
                let waiting = request.pin
            else { return reply(call, error: Self.noSuchRequest(strings[0], waitingFor: "a PIN")) }
            request.pin = nil
            live[strings[0]] = request
            waiting.resume(returning: strings[1])
            logger.debug("PIN entered", metadata: ["request": "\(strings[0])"])
            bus.reply(to: call, [])
        case (SecurityKeyDaemonBus.Method.selectCredential.rawValue, 2):
            guard var request = live[strings[0]], request.owner == call.caller.uniqueName,
                let waiting = request.account
            else {
                return reply(call, error: Self.noSuchRequest(strings[0], waitingFor: "a credential choice"))
            }
            guard let id = Base64URL.decode(strings[1]),
                let index = waiting.accounts.firstIndex(where: { $0.credentialID == id })
            else {
                return reply(
                    call, error: DaemonError(.type, "\(strings[1]) is not one of the credentials offered."))
            }
            request.account = nil
            live[strings[0]] = request
            waiting.continuation.resume(returning: index)
            bus.reply(to: call, [])
        case (SecurityKeyDaemonBus.Method.cancelRequest.rawValue, 1):
            guard let request = live[strings[0]], request.owner == call.caller.uniqueName else {
                return reply(call, error: Self.noSuchRequest(strings[0], waitingFor: nil))
            }
            request.interrupt.yield(.cancelledByCaller)
            bus.reply(to: call, [])
        default:
            bus.replyError(
                to: call, name: "org.freedesktop.DBus.Error.UnknownMethod",
                message: "No method \(call.member) with \(strings.count) argument(s); see Introspect.")
        }
    }

    /// The same answer for an unknown request and another caller's: a caller learns nothing
    /// about requests that are not its own.
    static func noSuchRequest(_ id: String, waitingFor: String?) -> DaemonError {
        DaemonError(
            .invalidState,
            "No request \(id) of yours" + (waitingFor.map { " is waiting for \($0)." } ?? " is in progress."))
    }

    static let capabilities: [BusDictionaryEntry] = [
        // WebAuthn L3 §5.1.7 ClientCapability names; only roaming keys are offered here.
        BusDictionaryEntry("conditionalCreate", .bool(false)),
        BusDictionaryEntry("conditionalGet", .bool(false)),
        BusDictionaryEntry("hybridTransport", .bool(false)),
        BusDictionaryEntry("passkeyPlatformAuthenticator", .bool(false)),
        BusDictionaryEntry("userVerifyingPlatformAuthenticator", .bool(false)),
        BusDictionaryEntry("relatedOrigins", .bool(false)),
        BusDictionaryEntry("signalAllAcceptedCredentials", .bool(false)),
        BusDictionaryEntry("signalCurrentUserDetails", .bool(false)),
        BusDictionaryEntry("signalUnknownCredential", .bool(false)),
    ] + WebAuthnExtensionInputsJSON.implementedExtensions.map { BusDictionaryEntry("extension:\($0)", .bool(true)) }

    static func entries(_ device: KeyPool.DeviceSummary) -> [BusDictionaryEntry] {
        var entries = [
            BusDictionaryEntry("uri", .string(device.uri)),
            BusDictionaryEntry("transport", .string(device.transport)),
            BusDictionaryEntry("versions", .strings(device.versions)),
            BusDictionaryEntry("busy", .bool(device.busy)),
        ]
        if let aaguid = device.aaguid { entries.append(BusDictionaryEntry("aaguid", .string(aaguid))) }
        return entries
    }

    // MARK: Requests

    /// A parsed CreateCredential or GetCredential, ready to perform.
    typealias Ceremony = SecurityKeyAuthorizationRequest

    /// Checks and parses a ceremony call; answers it with the error and returns nil when it fails.
    func begin(_ call: BusMethodCall) -> Ceremony? {
        guard !stopping else {
            reply(call, error: DaemonError(.abort, "The daemon is stopping."))
            return nil
        }
        guard call.arguments.count == 3, let origin = call.arguments[0].stringValue,
            let topOrigin = call.arguments[1].stringValue, let json = call.arguments[2].stringValue
        else {
            reply(
                call,
                error: DaemonError(.type, "\(call.member) takes (origin s, top_origin s, options_json s)."))
            return nil
        }
        if let refusal = policy.refusal(call.caller, origin: origin)
            ?? (topOrigin.isEmpty ? nil : policy.refusal(call.caller, origin: topOrigin))
        {
            logger.info(
                "caller refused",
                metadata: [
                    "caller": "\(call.caller.uniqueName)", "pid": "\(call.caller.pid ?? -1)",
                    "origin": "\(origin)",
                ])
            reply(call, error: DaemonError(.security, refusal))
            return nil
        }
        let top = topOrigin.isEmpty ? nil : topOrigin
        do throws(SecurityKeyError) {
            if call.member == SecurityKeyDaemonBus.Method.createCredential.rawValue {
                let options = try PublicKeyCredentialCreationOptionsJSON(json: Array(json.utf8))
                return .registration(try options.registrationRequest(origin: origin, topOrigin: top))
            } else {
                let options = try PublicKeyCredentialRequestOptionsJSON(json: Array(json.utf8))
                return .assertion(try options.assertionRequest(origin: origin, topOrigin: top))
            }
        } catch {
            reply(call, error: DaemonError(error))
            return nil
        }
    }

    func signal(
        _ id: String, to owner: String, _ state: SecurityKeyDaemonBus.State, _ details: [BusDictionaryEntry] = []
    ) {
        bus.emitSignal(
            path: DaemonInterface.objectPath, interface: DaemonInterface.interface,
            member: SecurityKeyDaemonBus.stateChanged,
            destination: owner, [.string(id), .string(state.rawValue), .dictionary(details)])
    }

    private func register(_ id: String, owner: String) -> AsyncStream<Interruption> {
        let (stream, continuation) = AsyncStream<Interruption>.makeStream(
            bufferingPolicy: .bufferingNewest(1))
        live[id] = Live(owner: owner, interrupt: continuation)
        running += 1
        return stream
    }

    private func unregister(_ id: String) {
        if let request = live.removeValue(forKey: id) {
            request.pin?.resume(returning: nil)
            request.account?.continuation.resume(returning: nil)
            request.interrupt.finish()
        }
        running -= 1
        if running == 0 {
            for waiter in drained { waiter.resume() }
            drained = []
        }
    }

    private func interruptAll(ownedBy owner: String, _ why: Interruption) {
        for (id, request) in live where request.owner == owner {
            logger.info("caller left; cancelling its request", metadata: ["request": "\(id)"])
            request.interrupt.yield(why)
        }
    }

    /// Runs one ceremony and answers its call.
    func perform(_ call: BusMethodCall, _ ceremony: Ceremony) async {
        let id = UUID().uuidString.lowercased()
        let owner = call.caller.uniqueName
        let interruptions = register(id, owner: owner)
        defer { unregister(id) }
        signal(id, to: owner, .started, [BusDictionaryEntry("call_serial", .uint64(call.serial))])
        logger.debug("request started", metadata: ["request": "\(id)", "method": "\(call.member)"])
        let outcome = await RequestRun(daemon: self, id: id, owner: owner, ceremony: ceremony)
            .run(interruptions: interruptions)
        switch outcome {
        case .success(let json):
            signal(id, to: owner, .completed)
            bus.reply(to: call, [.string(json)])
        case .failure(let error):
            signal(
                id, to: owner, .failed,
                [
                    BusDictionaryEntry("error", .string(error.name.rawValue)),
                    BusDictionaryEntry("message", .string(error.message)),
                ])
            reply(call, error: error)
        }
        logger.debug("request ended", metadata: ["request": "\(id)"])
    }

    // MARK: Answers the ceremony waits for

    /// Waits for EnterClientPin (nil: the request ended first).
    func waitForPIN(_ id: String, attemptsLeft: Int?) async -> String? {
        guard live[id] != nil else { return nil }
        return await withCheckedContinuation { continuation in
            guard let owner = live[id]?.owner else { return continuation.resume(returning: nil) }
            live[id]?.pin?.resume(returning: nil)
            live[id]?.pin = continuation
            signal(
                id, to: owner, .needsPIN,
                [BusDictionaryEntry("attempts_left", .int32(Int32(attemptsLeft ?? -1)))])
        }
    }

    /// Waits for SelectCredential (nil: the request ended first).
    func waitForAccount(_ id: String, accounts: [SecurityKeyAccount]) async -> Int? {
        guard live[id] != nil else { return nil }
        return await withCheckedContinuation { continuation in
            guard let owner = live[id]?.owner else { return continuation.resume(returning: nil) }
            live[id]?.account?.continuation.resume(returning: nil)
            live[id]?.account = (continuation, accounts)
            let list = accounts.map { account in
                "{\"id\":\"\(Base64URL.encode(account.credentialID))\",\"userHandle\":\"\(Base64URL.encode(account.userID))\","
                    + "\"name\":\(Self.quoted(account.name)),\"displayName\":\(Self.quoted(account.displayName))}"
            }
            signal(
                id, to: owner, .selectCredential,
                [BusDictionaryEntry("credentials", .string("[" + list.joined(separator: ",") + "]"))])
        }
    }

    static func quoted(_ text: String?) -> String {
        guard let text else { return "null" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return (try? encoder.encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }

    /// Ends a wait whose task was cancelled.
    func abandonWaits(_ id: String) {
        if let pin = live[id]?.pin {
            live[id]?.pin = nil
            pin.resume(returning: nil)
        }
        if let account = live[id]?.account {
            live[id]?.account = nil
            account.continuation.resume(returning: nil)
        }
    }
}

/// The user, as one request reaches them: through its caller's EnterClientPin and
/// SelectCredential.
struct RequestInteraction: SecurityKeyInteraction {
    let daemon: Daemon
    let id: String

    func pin(deviceURI: String, attemptsLeft: Int?) async -> String? {
        await withTaskCancellationHandler {
            await daemon.waitForPIN(id, attemptsLeft: attemptsLeft)
        } onCancel: { [daemon, id] in
            Task { await daemon.abandonWaits(id) }
        }
    }

    func chooseAccount(_ accounts: [SecurityKeyAccount]) async -> Int? {
        await withTaskCancellationHandler {
            await daemon.waitForAccount(id, accounts: accounts)
        } onCancel: { [daemon, id] in
            Task { await daemon.abandonWaits(id) }
        }
    }
}
