import _SecurityKeyInternals
import CTAP2
import Logging
import Transport

/// Every key a directory finds, inspected in parallel (all at once, within ``concurrency``), each
/// within its own deadline: descriptor, getInfo, PIN state and a touch-free health check.
///
/// A key that never answers costs its own deadline and nothing more: the others go on in the
/// meantime, and its report says it timed out.
public struct FleetInventory: Sendable {
    /// Where the keys are found and opened.
    public let directory: AuthenticatorDirectory
    /// How many keys are inspected at once.
    public let concurrency: FleetConcurrency
    /// How long one key may take, from the moment its inspection starts.
    public let keyTimeout: Duration
    /// Whether each healthy key also registers a throwaway credential to show its attestation
    /// (needs a touch on every key), and how long a key may wait for its touch.
    public let attestation: AttestationCheck?
    /// Stored persistent tokens: a key with one in here reports its decrypted identifier.
    public let tokenStore: PersistentTokenStore?
    let logger: Logger

    /// The attestation step of an inventory: every healthy key is asked for a throwaway
    /// registration at once, so they all blink together.
    public struct AttestationCheck: Sendable {
        /// How long each key may wait for its touch (counted from the start of this step).
        public var touchTimeout: Duration
        /// Told when a key waits for its touch; never asked for a PIN (keys that need one are
        /// reported as such).
        public var interaction: (any AuthenticatorInteraction)?

        /// An attestation step giving each key `touchTimeout` for its touch.
        public init(touchTimeout: Duration = .seconds(30), interaction: (any AuthenticatorInteraction)? = nil) {
            self.touchTimeout = touchTimeout
            self.interaction = interaction
        }
    }

    /// An inventory of `directory`'s keys, as many at a time as `concurrency` allows (by default
    /// every key, within the transports' bounds), each given `keyTimeout`,
    /// with the `attestation` step when one is given; keys with a token in `tokenStore` report
    /// their identifier.
    public init(
        directory: AuthenticatorDirectory, concurrency: FleetConcurrency = .system(), keyTimeout: Duration = .seconds(10),
        attestation: AttestationCheck? = nil, tokenStore: PersistentTokenStore? = nil,
        logger: Logger = Logger(label: "securitykey.fleet")
    ) {
        self.tokenStore = tokenStore
        self.directory = directory
        self.concurrency = concurrency
        self.keyTimeout = keyTimeout
        self.attestation = attestation
        self.logger = logger
    }

    /// The devices every discovery lists now, in discovery order, followed by those of
    /// `configured` not listed (UDP endpoints the user named: one that does not answer is a
    /// key that failed, not a key that is absent), and the first permission failure (so a
    /// caller finding nothing can say why).
    public func devices(including configured: [DeviceDescriptor] = []) async
        -> (devices: [DeviceDescriptor], denied: AuthenticatorError?)
    {
        let outcome = await directory.forEachDevice { _, descriptor in descriptor }
        var listed = outcome.results
        for descriptor in configured where !listed.contains(where: { $0.uri == descriptor.uri }) {
            listed.append(descriptor)
        }
        return (listed, outcome.denied)
    }

    /// Inspects each of `devices`, as many at once as ``concurrency`` allows, calling `each` with every
    /// report as soon as it is ready (in completion order); returns the reports in the order of
    /// `devices`. `overall` bounds the whole run; each key also gets ``keyTimeout``.
    public func inspect(
        _ devices: [DeviceDescriptor], overall: Deadline, each: (FleetKeyReport) async -> Void = { _ in }
    ) async -> [FleetKeyReport] {
        var reports = [FleetKeyReport?](repeating: nil, count: devices.count)
        var schedule = FleetSchedule(devices.map(\.transport), bounds: concurrency)
        await withTaskGroup(of: (Int, FleetKeyReport).self) { group in
            func startReady() {
                for index in schedule.startable() {
                    let descriptor = devices[index]
                    group.addTask { (index, await inspect(descriptor, overall: overall)) }
                }
            }
            startReady()
            while let (index, report) = await group.next() {
                schedule.finished(index)
                startReady()
                if Self.isNotAKey(report) { continue }
                reports[index] = report
                await each(report)
            }
        }
        return reports.compactMap { $0 }
    }

    /// Whether a report is of a PC/SC reader that holds no card, or a card without the FIDO
    /// applet: not a key, so not part of the fleet (as `list` leaves such readers out).
    static func isNotAKey(_ report: FleetKeyReport) -> Bool {
        guard report.descriptor.transport == .nfc, report.info == nil, let problem = report.problem else { return false }
        return problem.code == .noDevice || problem.code == .notSupported
    }

    /// Inspects one key within ``keyTimeout`` (and `overall`). Never throws: every failure is
    /// in the report.
    public func inspect(_ descriptor: DeviceDescriptor, overall: Deadline) async -> FleetKeyReport {
        let clock = ContinuousClock()
        let started = clock.now
        let deadline = overall.capped(at: keyTimeout)
        var report = FleetKeyReport(descriptor: descriptor)
        let authenticator: Authenticator
        do throws(AuthenticatorError) {
            authenticator = try await open(descriptor.uri, deadline: deadline)
        } catch {
            report.problem = error
            report.elapsed = clock.now - started
            logger.debug("key failed", metadata: ["uri": "\(descriptor.uri)", "code": "\(error.code)"])
            return report
        }
        // Opening read getInfo once; that first exchange also set up the channel, so the
        // health check times a second, plain getInfo.
        report.descriptor = authenticator.descriptor
        report.info = await authenticator.info
        var health = FleetHealth()
        let infoStart = clock.now
        do throws(AuthenticatorError) {
            report.info = try await authenticator.refreshInfo(deadline: deadline)
            health.getInfoLatency = clock.now - infoStart
        } catch {
            health.failure = error
        }
        if let info = report.info, info.options.isSupported(.clientPIN) || info.options.isSupported(.userVerification) {
            do throws(AuthenticatorError) {
                report.pinStatus = try await authenticator.pinStatus(deadline: deadline)
            } catch {
                report.pinStatusProblem = error
            }
        }
        if let tokenStore, case .found(_, let identifier)? = try? await authenticator.storedToken(in: tokenStore) {
            report.identifier = identifier
        }
        if health.failure == nil, let info = report.info {
            await silentAssertion(authenticator, info: info, deadline: deadline, into: &health)
        }
        report.health = health
        if let attestation {
            if health.isHealthy {
                let touchDeadline = overall.capped(at: attestation.touchTimeout)
                do throws(AuthenticatorError) {
                    report.attestationSample = try await authenticator.throwawayRegistration(
                        interaction: attestation.interaction.map(NonPromptingInteraction.init), deadline: touchDeadline)
                } catch {
                    report.attestationProblem = error
                }
            } else {
                report.attestationProblem = AuthenticatorError(
                    .notSupported, "Attestation was not checked: the key failed its health check.",
                    deviceURI: descriptor.uri)
            }
        }
        await authenticator.close()
        report.elapsed = clock.now - started
        return report
    }

    /// Opens `uri` by the deadline: a transport's own open timeout may be longer than this
    /// key's, so the open is cancelled when the deadline comes first.
    func open(_ uri: String, deadline: Deadline) async throws(AuthenticatorError) -> Authenticator {
        let directory = self.directory
        let outcome = await withTaskGroup(of: Result<Authenticator, AuthenticatorError>?.self) { group in
            group.addTask {
                do throws(AuthenticatorError) {
                    return .success(try await directory.open(uri: uri, deadline: deadline))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                // nil: the deadline came (or the inventory was cancelled) first.
                try? await Task.sleep(until: deadline.instant, clock: .continuous)
                return nil
            }
            var first: Result<Authenticator, AuthenticatorError>?? = nil
            while let result = await group.next() {
                if first == nil {
                    first = .some(result)
                    group.cancelAll()
                } else if case .success(let late)? = result {
                    // Opened just as the deadline came: not used, so released.
                    await late.close()
                }
            }
            return first ?? nil
        }
        switch outcome {
        case .success(let authenticator)?: return authenticator
        case .failure(let error)?: throw error
        case nil:
            throw AuthenticatorError(
                .timeout, "The key did not answer before its deadline.", deviceURI: uri,
                underlying: deadline.timeoutError("Opening the key"))
        }
    }

    /// A getAssertion with up=false for a random RP ID and a random credential ID: no key holds
    /// that credential, so a healthy one answers CTAP2_ERR_NO_CREDENTIALS (CTAP 2.2 §6.2.2)
    /// without asking for a touch. With alwaysUv on, the spec has it ask for a token first
    /// (CTAP2_ERR_PUAT_REQUIRED), which is as correct an answer.
    func silentAssertion(
        _ authenticator: Authenticator, info: AuthenticatorInfo, deadline: Deadline, into health: inout FleetHealth
    ) async {
        let request = GetAssertionRequest(
            rpID: "fleet-\(Hex.encode(SystemRandom.bytes(8))).invalid", clientDataHash: SystemRandom.bytes(32),
            allowList: [PublicKeyCredentialDescriptor(id: SystemRandom.bytes(32))],
            options: CommandOptions(userPresence: false))
        let clock = ContinuousClock()
        let start = clock.now
        do throws(CTAP2Error) {
            _ = try await authenticator.session.getAssertion(request, deadline: deadline)
            health.assertionLatency = clock.now - start
            health.assertionStatus = "CTAP2_OK"
            health.failure = AuthenticatorError(
                .unexpectedAnswer, "The key returned an assertion for a credential it cannot hold.",
                deviceURI: authenticator.uri)
        } catch {
            guard let status = error.status else {
                health.failure = AuthenticatorError(error, deviceURI: authenticator.uri)
                return
            }
            health.assertionLatency = clock.now - start
            health.assertionStatus = status.name
            let expected =
                status == .noCredentials || (status == .pinUvAuthTokenRequired && info.isEnabled(.alwaysUV))
            if !expected {
                health.failure = AuthenticatorError(
                    .unexpectedAnswer,
                    "The key answered \(status.name) to a silent assertion for an unknown credential, not CTAP2_ERR_NO_CREDENTIALS.",
                    deviceURI: authenticator.uri, underlying: error)
            }
        }
    }
}

/// What the health check found: latencies and the silent assertion's answer.
public struct FleetHealth: Sendable {
    /// How long a plain getInfo took.
    public var getInfoLatency: Duration?
    /// How long the silent up=false getAssertion took to be refused.
    public var assertionLatency: Duration?
    /// The status the silent getAssertion got (`CTAP2_ERR_NO_CREDENTIALS` when healthy).
    public var assertionStatus: String?
    /// Why the key is not healthy; nil when it is.
    public var failure: AuthenticatorError?

    /// Creates an empty health record.
    public init() {}

    /// Whether both probes answered as a healthy key does.
    public var isHealthy: Bool { failure == nil && assertionStatus != nil }
}

/// One key of the fleet: how it is reached, what it said, and whether it is healthy.
public struct FleetKeyReport: Sendable {
    /// How the key is reached.
    public var descriptor: DeviceDescriptor
    /// Its getInfo, when it answered.
    public var info: AuthenticatorInfo?
    /// PIN and UV attempts left, minimum PIN length, forcePINChange (costs no attempt).
    public var pinStatus: PINStatus?
    /// The key's device identifier (decrypted encIdentifier), when a stored token fits it.
    public var identifier: [UInt8]?
    /// ``identifier`` in lower-case hex.
    public var identifierHex: String? { identifier.map { Hex.encode($0) } }
    /// Why the PIN status could not be read, where it could not.
    public var pinStatusProblem: AuthenticatorError?
    /// The health check; empty when the key could not be opened.
    public var health = FleetHealth()
    /// Why the key could not be inspected at all (a timeout, garbage, no FIDO applet).
    public var problem: AuthenticatorError?
    /// How long this key's inspection took.
    public var elapsed: Duration = .zero
    /// The throwaway registration's answer, with an attestation check.
    public var attestationSample: AttestationSample?
    /// Why the attestation check got no answer (no touch, PIN needed, unhealthy key).
    public var attestationProblem: AuthenticatorError?

    /// A report on `descriptor` with nothing found yet.
    public init(descriptor: DeviceDescriptor) {
        self.descriptor = descriptor
    }

    /// Whether the key answered and passed the health check.
    public var isHealthy: Bool { problem == nil && health.isHealthy }

    /// The first failure: the one that stopped the inspection, else the health check's.
    public var failure: AuthenticatorError? { problem ?? health.failure }
}

extension AuthenticatorError.Code {
    /// The key answered, but not as the specification says a healthy key does.
    public static let unexpectedAnswer = Self(rawValue: "unexpected-answer")
}

/// Passes activity notices on to the wrapped interaction but answers no PIN prompt: an
/// inventory never asks for PINs.
struct NonPromptingInteraction: AuthenticatorInteraction {
    let base: any AuthenticatorInteraction
    init(_ base: any AuthenticatorInteraction) { self.base = base }
    var canPrompt: Bool { false }
    func pin(_ prompt: PINPrompt) async -> String? { nil }
    func activity(_ activity: AuthenticatorActivity) { base.activity(activity) }
    func instruct(_ instruction: AuthenticatorInstruction) { base.instruct(instruction) }
}
