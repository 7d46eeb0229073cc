import Authenticators
import CTAP2
import Logging
import Transport

/// A request the controller performs.
public enum SecurityKeyAuthorizationRequest: Hashable, Sendable {
    /// Register a new credential.
    case registration(SecurityKeyCredentialRegistrationRequest)
    /// Sign in with an existing credential.
    case assertion(SecurityKeyCredentialAssertionRequest)

    /// How long the request may take (its `timeout`).
    public var timeout: Duration {
        switch self {
        case .registration(let registration): registration.timeout
        case .assertion(let assertion): assertion.timeout
        }
    }
}

/// What a performed request produced.
public enum SecurityKeyAuthorization: Hashable, Sendable {
    /// A new credential.
    case registration(SecurityKeyCredentialRegistration)
    /// A sign-in.
    case assertion(SecurityKeyCredentialAssertion)

    /// The new credential, when this is a registration.
    public var registration: SecurityKeyCredentialRegistration? {
        if case .registration(let registration) = self { return registration }
        return nil
    }

    /// The sign-in, when this is an assertion.
    public var assertion: SecurityKeyCredentialAssertion? {
        if case .assertion(let assertion) = self { return assertion }
        return nil
    }
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
/// others are cancelled. No key present: the request waits for one to be plugged in or put on
/// a reader (hotplug events, no polling). ``statusUpdates`` tells a UI what the request waits for; the
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
    /// Where keys are found and watched for (the discovery sources).
    let directory: AuthenticatorDirectory
    /// Connections the caller opened (the connection sources).
    let connections: [any AuthenticatorConnection]
    /// Keys the caller opened, with their getInfo (the authenticator sources); never closed here.
    let authenticators: [Authenticator]

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
        var discoveries: [any DeviceDiscovery] = []
        var connections: [any AuthenticatorConnection] = []
        var authenticators: [Authenticator] = []
        for source in sources {
            switch source.kind {
            case .discovery(let discovery): discoveries.append(discovery)
            case .connection(let connection): connections.append(connection)
            case .authenticator(let authenticator): authenticators.append(authenticator)
            }
        }
        self.directory = AuthenticatorDirectory(discoveries: discoveries, logger: logger)
        self.connections = connections
        self.authenticators = authenticators
        self.interaction = interaction
        self.publicSuffixes = publicSuffixes
        self.logger = logger
        (statusUpdates, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    }

    deinit { continuation.finish() }

    /// Performs `request` by `deadline` (default: the request's `timeout` from now).
    public func perform(_ request: SecurityKeyAuthorizationRequest, deadline: Deadline? = nil)
        async throws(SecurityKeyError) -> SecurityKeyAuthorization
    {
        switch request {
        case .registration(let r): .registration(try await performRegistration(r, deadline: deadline))
        case .assertion(let a): .assertion(try await performAssertion(a, deadline: deadline))
        }
    }

    /// Performs `request` by `deadline` (default: the request's `timeout` from now) and hands
    /// each status it reports meanwhile to `onStatus`, in order: the one loop a UI or a daemon
    /// runs around a request. Returns once the request ended; statuses reported after that are
    /// not delivered. One such call at a time per controller (they share ``statusUpdates``).
    public func perform(
        _ request: SecurityKeyAuthorizationRequest, deadline: Deadline? = nil,
        onStatus: @escaping @Sendable (SecurityKeyStatus) async -> Void
    ) async throws(SecurityKeyError) -> SecurityKeyAuthorization {
        let statuses = statusUpdates
        let outcome: Result<SecurityKeyAuthorization, SecurityKeyError> = await withTaskGroup(of: Void.self) {
            group in
            group.addTask {
                for await status in statuses { await onStatus(status) }
            }
            defer { group.cancelAll() }
            do throws(SecurityKeyError) {
                return .success(try await perform(request, deadline: deadline))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
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

    /// Runs `body` with the key to use — the only one present, the one touched among several,
    /// or the first to arrive — and closes the keys this controller opened (never the
    /// caller's ``authenticators``, whose getInfo is used as it is).
    func withSelectedKey<T: Sendable>(
        deadline: Deadline,
        _ body: (ProviderKey) async throws(SecurityKeyError) -> T
    ) async throws(SecurityKeyError) -> T {
        let chosen: Authenticator
        do throws(AuthenticatorError) {
            var fixed = authenticators
            for connection in connections {
                // A caller's connection that does not answer getInfo simply takes no part.
                if let key = try? await Authenticator.open(
                    connection, ownsConnection: false, deadline: deadline, logger: logger)
                {
                    fixed.append(key)
                }
            }
            chosen = try await directory.chooseAuthenticator(
                deadline: deadline, interaction: providerInteraction, including: fixed)
        } catch {
            emit(.done)
            throw SecurityKeyError(error)
        }
        emit(.keySelected(deviceURI: chosen.uri))
        let result: Result<T, SecurityKeyError>
        do throws(SecurityKeyError) {
            result = .success(try await body(ProviderKey(authenticator: chosen, info: await chosen.info)))
        } catch {
            result = .failure(error)
        }
        if !authenticators.contains(where: { $0 === chosen }) { await chosen.close() }
        emit(.done)
        return try result.get()
    }

    /// The device layer's view of this controller's user: PIN prompts go to ``interaction``,
    /// activities become ``statusUpdates``.
    var providerInteraction: ProviderInteraction {
        ProviderInteraction(interaction: interaction, continuation: continuation)
    }

    /// A keepalive observer that reports ``SecurityKeyStatus/touchNeeded(deviceURI:)`` once.
    func touchObserver(_ key: ProviderKey) -> @Sendable (KeepaliveStatus) -> Void {
        key.authenticator.touchObserver(providerInteraction)
    }
}

/// Throws a timed-out error once `deadline` has passed.
func checkDeadline(_ deadline: Deadline) throws(SecurityKeyError) {
    if deadline.hasPassed { throw SecurityKeyError(.timeout, "The request's deadline passed.") }
}
