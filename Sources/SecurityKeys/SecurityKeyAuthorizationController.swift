import CTAP2
import Logging
import Synchronization
import Transport

/// A request the controller performs.
public enum SecurityKeyAuthorizationRequest: Hashable, Sendable {
    /// Register a new credential.
    case registration(SecurityKeyCredentialRegistrationRequest)
    /// Sign in with an existing credential.
    case assertion(SecurityKeyCredentialAssertionRequest)
}

/// What a performed request produced.
public enum SecurityKeyAuthorization: Hashable, Sendable {
    /// A new credential.
    case registration(SecurityKeyCredentialRegistration)
    /// A sign-in.
    case assertion(SecurityKeyCredentialAssertion)
}

/// Receives a request's outcome, for callers who prefer callbacks (AuthenticationServices'
/// `ASAuthorizationControllerDelegate`).
public protocol SecurityKeyAuthorizationControllerDelegate: AnyObject, Sendable {
    /// The request succeeded.
    func authorizationController(
        _ controller: SecurityKeyAuthorizationController,
        didCompleteWithAuthorization authorization: SecurityKeyAuthorization)
    /// The request failed.
    func authorizationController(
        _ controller: SecurityKeyAuthorizationController, didCompleteWithError error: SecurityKeyError)
}

/// Performs registration and assertion requests with the security keys it finds (AuthenticationServices'
/// `ASAuthorizationController`, for security keys, on Linux).
///
/// Every request has a deadline (its `timeout`); cancelling the calling task cancels the request
/// on the keys at once. Several keys present: all blink, the first touched is used and the
/// others are cancelled. ``statusUpdates`` tells a UI what the request waits for; the
/// ``SecurityKeyInteraction`` answers PIN prompts and account choices.
public final class SecurityKeyAuthorizationController: Sendable {
    /// Where keys are looked for.
    public let sources: [SecurityKeySource]
    /// Who is asked for PINs and account choices; nil makes such requests fail with
    /// ``SecurityKeyError/Code/notInteractive``.
    public let interaction: (any SecurityKeyInteraction)?
    /// What the requests of this controller wait for, in order; finishes when the controller
    /// is released. Holds the newest 64 events when nobody reads.
    public let statusUpdates: AsyncStream<SecurityKeyStatus>

    let continuation: AsyncStream<SecurityKeyStatus>.Continuation
    let publicSuffixes: PublicSuffixList?
    let logger: Logger
    /// How often discovery is polled while no key is present.
    let pollInterval: Duration = .milliseconds(200)

    /// Creates a controller.
    /// - Parameters:
    ///   - sources: where to look for keys (default: USB and PC/SC).
    ///   - interaction: asks the user for PINs and account choices.
    ///   - publicSuffixes: the list origins are checked against (default: Debian's).
    ///   - logger: commands and statuses at `debug`; PINs and tokens are never logged.
    public init(
        sources: [SecurityKeySource] = SecurityKeySource.system,
        interaction: (any SecurityKeyInteraction)? = nil,
        publicSuffixes: PublicSuffixList? = PublicSuffixList.system,
        logger: Logger = Logger(label: "securitykey.provider")
    ) {
        self.sources = sources
        self.interaction = interaction
        self.publicSuffixes = publicSuffixes
        self.logger = logger
        (statusUpdates, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    }

    deinit { continuation.finish() }

    /// Performs `request`.
    public func perform(_ request: SecurityKeyAuthorizationRequest) async throws(SecurityKeyError)
        -> SecurityKeyAuthorization
    {
        switch request {
        case .registration(let r): .registration(try await performRegistration(r))
        case .assertion(let a): .assertion(try await performAssertion(a))
        }
    }

    /// Performs `request` and reports the outcome to `delegate`; returns when it is reported.
    public func performRequest(
        _ request: SecurityKeyAuthorizationRequest, delegate: any SecurityKeyAuthorizationControllerDelegate
    ) async {
        do throws(SecurityKeyError) {
            let authorization = try await perform(request)
            delegate.authorizationController(self, didCompleteWithAuthorization: authorization)
        } catch {
            delegate.authorizationController(self, didCompleteWithError: error)
        }
    }

    // MARK: Shared machinery

    func emit(_ status: SecurityKeyStatus) {
        continuation.yield(status)
    }

    /// Runs `body` with the keys present (waiting for one until `deadline`), the chosen key when
    /// several are present, and closes the keys this controller opened.
    func withSelectedKey<T: Sendable>(
        deadline: Deadline,
        _ body: (ProviderKey) async throws(SecurityKeyError) -> T
    ) async throws(SecurityKeyError) -> T {
        let keys: [ProviderKey]
        do throws(SecurityKeyError) {
            keys = try await discoverKeys(deadline: deadline)
        } catch {
            emit(.done)
            throw error
        }
        let result: Result<T, SecurityKeyError>
        do throws(SecurityKeyError) {
            let key = try await selectKey(keys, deadline: deadline)
            result = .success(try await body(key))
        } catch {
            result = .failure(error)
        }
        for key in keys where key.owned { await key.session.connection.close() }
        emit(.done)
        return try result.get()
    }

    /// Opens every key the sources offer, polling until at least one answers getInfo.
    func discoverKeys(deadline: Deadline) async throws(SecurityKeyError) -> [ProviderKey] {
        var announced = false
        var denied: TransportError?
        while true {
            var keys: [ProviderKey] = []
            for source in sources {
                switch source.kind {
                case .connection(let connection):
                    if let key = await ProviderKey.open(
                        connection, owned: false, deadline: deadline, logger: logger)
                    {
                        keys.append(key)
                    }
                case .discovery(let discovery):
                    let found: [DeviceDescriptor]
                    do { found = try await discovery.devices() } catch {
                        if error.code == .permissionDenied { denied = error }
                        logger.debug(
                            "discovery failed",
                            metadata: ["scheme": "\(discovery.scheme)", "code": "\(error.code)"])
                        continue
                    }
                    for device in found {
                        let connection: any AuthenticatorConnection
                        do { connection = try await discovery.open(uri: device.uri) } catch {
                            if error.code == .permissionDenied { denied = error }
                            continue
                        }
                        if let key = await ProviderKey.open(
                            connection, owned: true, deadline: deadline, logger: logger)
                        {
                            keys.append(key)
                        } else {
                            await connection.close()
                        }
                    }
                }
            }
            if !keys.isEmpty { return keys }
            if Task.isCancelled { throw SecurityKeyError(.canceled, "The request was cancelled.") }
            if deadline.remaining <= pollInterval {
                if let denied {
                    throw SecurityKeyError(
                        .permissionDenied,
                        "A security key is present but this user may not open it; add a udev rule or join the group that owns it.",
                        underlying: denied)
                }
                throw SecurityKeyError(
                    .noKeyFound, "No security key was found before the deadline; insert or tap one.")
            }
            if !announced {
                announced = true
                emit(.waitingForKey)
            }
            do { try await Task.sleep(for: pollInterval) } catch {
                throw SecurityKeyError(.canceled, "The request was cancelled.")
            }
        }
    }

    /// With one key, that key; with several, the first the user touches (the others are
    /// cancelled as soon as one is touched).
    func selectKey(_ keys: [ProviderKey], deadline: Deadline) async throws(SecurityKeyError)
        -> ProviderKey
    {
        guard keys.count > 1 else {
            guard let only = keys.first else {
                throw SecurityKeyError(.noKeyFound, "No security key was found; insert or tap one.")
            }
            return only
        }
        emit(.selectingKey(count: keys.count))
        let logger = self.logger
        let outcome = await withTaskGroup(
            of: (Int, SecurityKeyError?).self, returning: (Int?, SecurityKeyError?).self
        ) { group in
            for (index, key) in keys.enumerated() {
                group.addTask {
                    do throws(SecurityKeyError) {
                        try await key.waitForTouch(deadline: deadline)
                        return (index, nil)
                    } catch {
                        return (index, error)
                    }
                }
            }
            var lastError: SecurityKeyError?
            while let (index, error) = await group.next() {
                guard let error else {
                    logger.debug("key selected", metadata: ["device": "\(keys[index].uri)"])
                    group.cancelAll()
                    return (index, nil)
                }
                logger.debug(
                    "key left the selection",
                    metadata: ["device": "\(keys[index].uri)", "code": "\(error.code)"])
                lastError = error
            }
            return (nil, lastError)
        }
        if let index = outcome.0 { return keys[index] }
        if Task.isCancelled { throw SecurityKeyError(.canceled, "The request was cancelled.") }
        throw outcome.1 ?? SecurityKeyError(.timedOut, "No security key was touched before the deadline.")
    }

    /// A keepalive observer that reports ``SecurityKeyStatus/touchNeeded(deviceURI:)`` once.
    func touchObserver(_ key: ProviderKey) -> @Sendable (KeepaliveStatus) -> Void {
        let reported = Mutex(false)
        let continuation = self.continuation
        let uri = key.uri
        return { status in
            guard status == .userPresenceNeeded else { return }
            let first = reported.withLock { (done: inout Bool) -> Bool in
                defer { done = true }
                return !done
            }
            if first { continuation.yield(.touchNeeded(deviceURI: uri)) }
        }
    }
}

/// Throws a timed-out error once `deadline` has passed.
func checkDeadline(_ deadline: Deadline) throws(SecurityKeyError) {
    if deadline.hasPassed { throw SecurityKeyError(.timedOut, "The request's deadline passed.") }
}
