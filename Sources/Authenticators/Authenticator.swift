import CBOR
import CTAP2
import Logging
import Synchronization
import Transport

/// One open authenticator: its CTAP2 session, what getInfo said as types, and how it is
/// reached. The provider API, the CLI and securitykeyd talk to keys through this handle.
///
/// Commands run one at a time (the session queues them); every call takes a ``Deadline`` that
/// is passed unchanged down to the transport's read slices.
public actor Authenticator {
    /// How the authenticator is reached (URI, transport, USB IDs where known).
    public nonisolated let descriptor: DeviceDescriptor
    /// The CTAP2 session, for commands this type has no method for.
    public nonisolated let session: CTAP2Session
    /// The latest getInfo response.
    public private(set) var info: AuthenticatorInfo
    /// Whether ``close()`` releases the connection (false for connections the caller owns).
    public nonisolated let ownsConnection: Bool
    let logger: Logger

    /// How long the first getInfo may take when a key is opened.
    public static let getInfoTimeout: Duration = .seconds(5)

    init(session: CTAP2Session, info: AuthenticatorInfo, ownsConnection: Bool, logger: Logger) {
        self.session = session
        self.descriptor = session.connection.descriptor
        self.info = info
        self.ownsConnection = ownsConnection
        self.logger = logger
    }

    /// Starts a session over `connection` and reads getInfo (bounded by ``getInfoTimeout``).
    /// On failure a connection this handle would own is closed.
    public static func open(
        _ connection: any AuthenticatorConnection, ownsConnection: Bool = true, deadline: Deadline,
        logger: Logger = Logger(label: "securitykey.authenticator")
    ) async throws(AuthenticatorError) -> Authenticator {
        let session = CTAP2Session(connection: connection, logger: logger)
        do throws(CTAP2Error) {
            let info = try await session.getInfo(deadline: deadline.capped(at: getInfoTimeout))
            // A getInfo without FIDO_2_x: the key is used through U2F (Authenticator+U2F.swift).
            if info.isU2FOnly, let u2f = await u2fOnlyInfo(session, after: nil, deadline: deadline) {
                return Authenticator(session: session, info: u2f, ownsConnection: ownsConnection, logger: logger)
            }
            return Authenticator(session: session, info: info, ownsConnection: ownsConnection, logger: logger)
        } catch {
            if let u2f = await u2fOnlyInfo(session, after: error, deadline: deadline) {
                return Authenticator(session: session, info: u2f, ownsConnection: ownsConnection, logger: logger)
            }
            if ownsConnection { await connection.close() }
            logger.debug(
                "device is not a usable CTAP2 key",
                metadata: ["device": "\(connection.descriptor.uri)", "code": "\(error.code)"])
            throw AuthenticatorError(error, deviceURI: connection.descriptor.uri)
        }
    }

    /// The device URI (`hid:/dev/hidraw3`, `pcsc:Reader`, `udp:127.0.0.1:8111`).
    public nonisolated var uri: String { descriptor.uri }

    /// How the key is reached.
    public nonisolated var transport: TransportKind { descriptor.transport }

    /// Asks getInfo again (after a PIN change, a config change, ...) and keeps the answer.
    @discardableResult
    public func refreshInfo(deadline: Deadline) async throws(AuthenticatorError) -> AuthenticatorInfo {
        if info.isU2FOnly { return info }
        do throws(CTAP2Error) {
            info = try await session.getInfo(deadline: deadline)
            return info
        } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }

    /// Whether the key speaks CTAP 2.1 (authenticatorSelection, token permissions).
    public var isCTAP21: Bool { info.supportsCTAP21 }

    /// Makes the key blink, where the transport can.
    public func wink() async throws(AuthenticatorError) {
        do { try await session.connection.wink() } catch { throw AuthenticatorError(error, deviceURI: uri) }
    }

    /// Releases the connection if this handle owns it.
    public func close() async {
        if ownsConnection { await session.connection.close() }
    }

    // MARK: Touch

    /// Returns once the user touches this key: authenticatorSelection (CTAP 2.1 §6.9) where the
    /// key has it, else a makeCredential with an empty pinUvAuthParam, which a CTAP 2.0 key
    /// answers after a touch with PIN_NOT_SET or PIN_INVALID (CTAP 2.1 §6.1.2 step 1) without
    /// creating anything (libfido2 and browsers do the same).
    public func waitForTouch(
        deadline: Deadline, interaction: (any AuthenticatorInteraction)? = nil
    ) async throws(AuthenticatorError) {
        let keepalive = touchObserver(interaction)
        if isU2FOnly {
            try await waitForU2FTouch(deadline: deadline, keepalive: keepalive)
            return
        }
        do throws(CTAP2Error) {
            if isCTAP21 {
                try await session.selection(deadline: deadline, keepalive: keepalive)
                return
            }
            var probe = MakeCredentialRequest(
                clientDataHash: [UInt8](repeating: 0, count: 32), rp: RelyingPartyEntity(id: ".dummy"),
                user: UserEntity(id: [0x01], name: "dummy"),
                pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)])
            if info.options.isSupported(.clientPIN) {
                probe.pinUVAuthParam = []
                probe.pinUVAuthProtocol = 1
            }
            _ = try await session.makeCredential(probe, deadline: deadline, keepalive: keepalive)
        } catch {
            // The status, not the code: the touch is what was asked for, whatever the PIN state.
            if error.status == .pinNotSet || error.status == .pinInvalid { return }
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }

    /// A keepalive observer that tells `interaction` once that the key waits for a touch.
    public nonisolated func touchObserver(_ interaction: (any AuthenticatorInteraction)?)
        -> @Sendable (KeepaliveStatus) -> Void
    {
        guard let interaction else { return { _ in } }
        let reported = Mutex(false)
        let uri = self.uri
        return { status in
            guard status == .userPresenceNeeded else { return }
            let first = reported.withLock { (done: inout Bool) -> Bool in
                defer { done = true }
                return !done
            }
            if first { interaction.activity(.touchNeeded(deviceURI: uri)) }
        }
    }

    // MARK: PIN

    /// The clientPIN helper for this key, with its current getInfo.
    public func clientPIN() throws(AuthenticatorError) -> ClientPIN {
        do { return try ClientPIN(session: session, info: info, logger: logger) } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }

    /// PIN attempts left (costs no attempt).
    public func pinRetries(deadline: Deadline) async throws(AuthenticatorError) -> ClientPIN.PINRetries {
        let pin = try clientPIN()
        do { return try await pin.pinRetries(deadline: deadline) } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }

    /// Built-in UV attempts left (costs no attempt).
    public func uvRetries(deadline: Deadline) async throws(AuthenticatorError) -> Int {
        let pin = try clientPIN()
        do { return try await pin.uvRetries(deadline: deadline) } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }
}
