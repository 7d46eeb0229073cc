import CBOR
import Crypto
import Logging
import Transport

/// The platform side of authenticatorClientPIN (CTAP 2.1 §6.5): PIN retries, setting and
/// changing the PIN, and obtaining pinUvAuthTokens with a PIN or built-in UV.
///
/// Rules this type keeps:
/// - A PIN that breaks ``PINPolicy`` is refused before the key is asked.
/// - It never sends a PIN the caller did not hand it in that call and never retries one, so
///   a blocked state ends the call; reading retry counters (which costs no attempt)
///   is the only extra request it makes, to tell the user how many attempts are left.
/// - PINs, PIN hashes, shared secrets and tokens are wiped after use where Swift allows and
///   never logged; the log names subcommands and status codes only.
public struct ClientPIN: Sendable {
    /// The session commands go through.
    public let session: CTAP2Session
    /// The getInfo response the PIN rules and subcommand choices are based on.
    public let info: AuthenticatorInfo
    /// The PIN/UV auth protocol in use.
    public let pinUVAuthProtocol: any PINUVAuthProtocol
    private let logger: Logger
    /// Makes the platform's ephemeral key-agreement key; replaced by known-answer tests.
    var makeEphemeralKey: @Sendable () -> P256.KeyAgreement.PrivateKey = { P256.KeyAgreement.PrivateKey() }

    /// Uses `session` with the authenticator described by `info`; `pinUVAuthProtocol` defaults
    /// to ``preferredProtocol(for:)``.
    public init(
        session: CTAP2Session, info: AuthenticatorInfo, pinUVAuthProtocol: (any PINUVAuthProtocol)? = nil,
        logger: Logger = Logger(label: "securitykey.ctap2.clientpin")
    ) throws(CTAP2Error) {
        self.session = session
        self.info = info
        if let pinUVAuthProtocol {
            self.pinUVAuthProtocol = pinUVAuthProtocol
        } else {
            self.pinUVAuthProtocol = try Self.preferredProtocol(for: info)
        }
        self.logger = logger
    }

    /// Uses `session` with the info it already holds, asking the key with getInfo first when
    /// it holds none.
    public init(
        session: CTAP2Session, logger: Logger = Logger(label: "securitykey.ctap2.clientpin")
    ) async throws(CTAP2Error) {
        let info: AuthenticatorInfo
        if let cached = await session.info {
            info = cached
        } else {
            info = try await session.getInfo()
        }
        try self.init(session: session, info: info, logger: logger)
    }

    /// The protocol to use with a key: two whenever the key lists it, else one (CTAP 2.1
    /// §6.5.4; protocol two is the stronger one). A CTAP 2.0 key that offers clientPin without
    /// a pinUvAuthProtocols list gets one, the only protocol CTAP 2.0 had.
    public static func preferredProtocol(for info: AuthenticatorInfo) throws(CTAP2Error)
        -> any PINUVAuthProtocol
    {
        let offered = info.pinUVAuthProtocols
        if offered.contains(2) { return PINUVAuthProtocolTwo() }
        if offered.contains(1) { return PINUVAuthProtocolOne() }
        if offered.isEmpty, info.options[.clientPIN] != nil { return PINUVAuthProtocolOne() }
        throw CTAP2Error(
            .pinUVNotSupported,
            "The key offers no PIN/UV auth protocol this library supports (it lists \(offered)).")
    }

    // MARK: Retries

    /// PIN attempts left, and whether the key must be power-cycled before the next attempt.
    public struct PINRetries: Hashable, Sendable {
        /// Attempts left before the PIN is blocked for good.
        public var retries: Int
        /// Whether the key must be removed and re-inserted before the next PIN attempt
        /// (nil when the key does not say).
        public var powerCycleRequired: Bool?
    }

    /// getPINRetries: costs no attempt.
    public func pinRetries(deadline: Deadline? = nil) async throws(CTAP2Error) -> PINRetries {
        let response = try await send(
            ClientPINRequest(pinUVAuthProtocol: version, subCommand: .getPINRetries), deadline)
        guard let retries = response.pinRetries else {
            throw CTAP2Error.malformed("The getPINRetries response lacks pinRetries.")
        }
        return PINRetries(retries: Int(clamping: retries), powerCycleRequired: response.powerCycleState)
    }

    /// getUVRetries: built-in UV attempts left; costs no attempt.
    public func uvRetries(deadline: Deadline? = nil) async throws(CTAP2Error) -> Int {
        let response = try await send(
            ClientPINRequest(pinUVAuthProtocol: version, subCommand: .getUVRetries), deadline)
        guard let retries = response.uvRetries else {
            throw CTAP2Error.malformed("The getUVRetries response lacks uvRetries.")
        }
        return Int(clamping: retries)
    }

    // MARK: Key agreement

    /// getKeyAgreement, then ECDH with a fresh platform key: the shared secret for one
    /// following subcommand or extension (hmac-secret).
    public func sharedSecret(deadline: Deadline? = nil) async throws(CTAP2Error) -> PINUVSharedSecret {
        let response = try await send(
            ClientPINRequest(pinUVAuthProtocol: version, subCommand: .getKeyAgreement), deadline)
        guard let peer = response.keyAgreement else {
            throw CTAP2Error.malformed("The getKeyAgreement response lacks keyAgreement.")
        }
        guard peer.keyType == .ec2, peer.curve == .p256,
            let x = peer.parameters[COSEKey.Label.x]?.bytesValue, x.count == 32,
            let y = peer.parameters[COSEKey.Label.y]?.bytesValue, y.count == 32
        else {
            throw CTAP2Error.malformed("The authenticator's key-agreement key is not an EC2 P-256 COSE key.")
        }
        var result = try pinUVAuthProtocol.encapsulate(peerX: x, peerY: y, using: makeEphemeralKey())
        defer { result.sharedSecret.wipe() }
        return PINUVSharedSecret(
            pinUVAuthProtocol: pinUVAuthProtocol,
            platformKeyAgreement: PINUVSharedSecret.coseKey(x: result.x, y: result.y),
            secret: result.sharedSecret)
    }

    // MARK: Setting and changing the PIN

    /// setPIN: sets the first PIN of a key that has none.
    public func setPIN(_ newPIN: String, deadline: Deadline? = nil) async throws(CTAP2Error) {
        try requireClientPIN()
        var pinBytes = try PINPolicy.newPINBytes(newPIN, info: info)
        defer { pinBytes.wipe() }
        let secret = try await sharedSecret(deadline: deadline)
        defer { secret.wipe() }
        var plaintext = PINPolicy.padded(pinBytes)
        defer { plaintext.wipe() }
        let newPINEnc = try secret.encrypt(plaintext)
        let request = ClientPINRequest(
            pinUVAuthProtocol: version, subCommand: .setPIN, keyAgreement: secret.platformKeyAgreement,
            pinUVAuthParam: try secret.authenticate(newPINEnc), newPINEnc: newPINEnc)
        _ = try await send(request, deadline, context: .newPIN)
        logger.debug("The PIN was set.")
    }

    /// changePIN: replaces the PIN; `currentPIN` proves the user knows the old one.
    public func changePIN(from currentPIN: String, to newPIN: String, deadline: Deadline? = nil)
        async throws(CTAP2Error)
    {
        try requireClientPIN()
        var newBytes = try PINPolicy.newPINBytes(newPIN, info: info)
        defer { newBytes.wipe() }
        var pinHash = try Self.pinHash(currentPIN)
        defer { pinHash.wipe() }
        let secret = try await sharedSecret(deadline: deadline)
        defer { secret.wipe() }
        var plaintext = PINPolicy.padded(newBytes)
        defer { plaintext.wipe() }
        let newPINEnc = try secret.encrypt(plaintext)
        let pinHashEnc = try secret.encrypt(pinHash)
        let request = ClientPINRequest(
            pinUVAuthProtocol: version, subCommand: .changePIN, keyAgreement: secret.platformKeyAgreement,
            pinUVAuthParam: try secret.authenticate(newPINEnc + pinHashEnc), newPINEnc: newPINEnc,
            pinHashEnc: pinHashEnc)
        _ = try await send(request, deadline, context: .changePIN)
        logger.debug("The PIN was changed.")
    }

    // MARK: Tokens

    /// A pinUvAuthToken for `permissions`, bound to `rpID` where given, obtained with the PIN:
    /// getPinUvAuthTokenUsingPinWithPermissions (0x09) on keys with the pinUvAuthToken option,
    /// else the legacy getPinToken (0x05), which takes neither permissions nor an RP ID (CTAP 2.0
    /// keys grant such a token everything; the returned token records what was asked for).
    ///
    /// Refused before the key is asked when the key demands a PIN change (forcePINChange) or
    /// the PIN breaks the fixed PIN rules.
    public func pinUVAuthToken(
        pin: String, permissions: PINUVAuthTokenPermissions, rpID: String? = nil, deadline: Deadline? = nil
    ) async throws(CTAP2Error) -> PINUVAuthToken {
        try requireClientPIN()
        guard !permissions.isEmpty else {
            throw CTAP2Error(.invalidRequest, "A PIN/UV token needs at least one permission.")
        }
        if info.forcePINChange == true {
            throw CTAP2Error(
                .pinChangeRequired, "The key requires a new PIN before it can be used: change the PIN first.")
        }
        var pinHash = try Self.pinHash(pin)
        defer { pinHash.wipe() }
        let withPermissions = info.isEnabled(.pinUVAuthToken)
        let secret = try await sharedSecret(deadline: deadline)
        defer { secret.wipe() }
        let request = ClientPINRequest(
            pinUVAuthProtocol: version,
            subCommand: withPermissions ? .getPINUVAuthTokenUsingPINWithPermissions : .getPINToken,
            keyAgreement: secret.platformKeyAgreement, pinHashEnc: try secret.encrypt(pinHash),
            permissions: withPermissions ? permissions : nil, rpID: withPermissions ? rpID : nil)
        let response = try await send(request, deadline, context: .pinToken)
        return try token(
            from: response, secret: secret, permissions: permissions, rpID: withPermissions ? rpID : nil)
    }

    /// A pinUvAuthToken for `permissions`, bound to `rpID` where given, obtained with the key's
    /// built-in user verification (getPinUvAuthTokenUsingUvWithPermissions, 0x06). The user acts
    /// on the key; `keepalive` reports progress. On ``CTAP2Error/Code/uvBlocked`` fall back to
    /// ``pinUVAuthToken(pin:permissions:rpID:deadline:)``.
    public func uvAuthToken(
        permissions: PINUVAuthTokenPermissions, rpID: String? = nil, deadline: Deadline? = nil,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> PINUVAuthToken {
        guard info.isEnabled(.pinUVAuthToken), info.options[.userVerification] != nil else {
            throw CTAP2Error(
                .pinUVNotSupported, "The key offers no built-in user verification for PIN/UV tokens.")
        }
        guard !permissions.isEmpty else {
            throw CTAP2Error(.invalidRequest, "A PIN/UV token needs at least one permission.")
        }
        let secret = try await sharedSecret(deadline: deadline)
        defer { secret.wipe() }
        let request = ClientPINRequest(
            pinUVAuthProtocol: version, subCommand: .getPINUVAuthTokenUsingUVWithPermissions,
            keyAgreement: secret.platformKeyAgreement, permissions: permissions, rpID: rpID)
        let response = try await send(request, deadline, context: .uvToken, keepalive: keepalive)
        return try token(from: response, secret: secret, permissions: permissions, rpID: rpID)
    }

    // MARK: Errors a user can act on

    /// Adds what the user can act on to an error from a command that used a PIN/UV token or
    /// built-in UV (makeCredential, getAssertion, credential management, ...): the attempts
    /// left after a wrong PIN or failed UV, read from the free retry counters. The code is
    /// already set by the session; other errors come back unchanged.
    public func explain(_ error: CTAP2Error, deadline: Deadline? = nil) async -> CTAP2Error {
        await explain(error, context: .command, deadline: deadline)
    }

    // MARK: Internals

    enum Context {
        case newPIN, changePIN, pinToken, uvToken, command, counter
    }

    private var version: UInt64 { UInt64(pinUVAuthProtocol.version) }

    private func requireClientPIN() throws(CTAP2Error) {
        guard info.options[.clientPIN] != nil else {
            throw CTAP2Error(.pinUVNotSupported, "The key does not support a PIN.")
        }
    }

    /// LEFT(SHA-256(PIN), 16) of a PIN checked against the fixed rules (§6.5.5.5).
    private static func pinHash(_ pin: String) throws(CTAP2Error) -> [UInt8] {
        var bytes = try PINPolicy.currentPINBytes(pin)
        defer { bytes.wipe() }
        var digest = Array(SHA256.hash(data: bytes))
        defer { digest.wipe() }
        return Array(digest.prefix(16))
    }

    private func token(
        from response: ClientPINResponse, secret: PINUVSharedSecret, permissions: PINUVAuthTokenPermissions,
        rpID: String?
    ) throws(CTAP2Error) -> PINUVAuthToken {
        guard let encrypted = response.pinUVAuthTokenEnc else {
            throw CTAP2Error.malformed("The clientPIN response lacks the pinUvAuthToken.")
        }
        // Protocol one: a 2.1 token is 32 bytes, CTAP 2.0 keys also issued 16; protocol two
        // adds a 16-byte IV to a 32-byte token.
        let allowed = pinUVAuthProtocol.version == 2 ? [48] : [16, 32]
        guard allowed.contains(encrypted.count) else {
            throw CTAP2Error.malformed("The encrypted pinUvAuthToken is \(encrypted.count) bytes long.")
        }
        var bytes = try secret.decrypt(encrypted)
        defer { bytes.wipe() }
        return PINUVAuthToken(
            token: bytes, pinUVAuthProtocol: pinUVAuthProtocol, permissions: permissions, rpID: rpID)
    }

    private func send(
        _ request: ClientPINRequest, _ deadline: Deadline?, context: Context = .counter,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> ClientPINResponse {
        logger.debug("clientPIN", metadata: ["subCommand": "\(request.subCommand)"])
        do throws(CTAP2Error) {
            return try await session.send(request, deadline: deadline, keepalive: keepalive)
        } catch {
            let explained = await explain(error, context: context, deadline: deadline)
            logger.debug(
                "clientPIN failed",
                metadata: ["subCommand": "\(request.subCommand)", "code": "\(explained.code)"])
            throw explained
        }
    }

    /// What a status means depends on the call only in the cases below; everything else was
    /// classified by the session (``CTAP2Error/classify(_:)``) and comes back unchanged.
    private func explain(_ error: CTAP2Error, context: Context, deadline: Deadline?) async -> CTAP2Error {
        var explained = error
        switch error.code {
        case .pinInvalid where context != .counter:
            // getPINRetries costs no attempt; if it fails the user still learns the PIN was wrong.
            let retries = try? await pinRetries(deadline: deadline)
            let left = retries.map { " \($0.retries) attempt\($0.retries == 1 ? "" : "s") left." } ?? ""
            let cycle =
                retries?.powerCycleRequired == true
                ? " Remove and re-insert the key before trying again." : ""
            explained.message += left + cycle
            explained.retriesLeft = retries?.retries
        case .uvInvalid where context != .counter:
            let retries = try? await uvRetries(deadline: deadline)
            explained.message += retries.map { " \($0) attempt\($0 == 1 ? "" : "s") left." } ?? ""
            explained.retriesLeft = retries
        case .notAllowed where context == .newPIN:
            explained.message = "A PIN is already set on this key: change it instead."
        case .pinPolicyViolation where context == .newPIN || context == .changePIN:
            explained.message = PINPolicy.refusalMessage(info: info)
        case .pinPolicyViolation where context == .pinToken:
            // Asked for a token, not a new PIN: the key wants its PIN changed first.
            explained.code = .pinChangeRequired
            explained.message = "The key requires a new PIN before it can be used: change the PIN first."
        default:
            break
        }
        return explained
    }
}
