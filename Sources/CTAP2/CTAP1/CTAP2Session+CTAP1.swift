import Transport

extension CTAP2Session {
    /// How often a U2F request is repeated while the key answers "conditions not satisfied"
    /// (U2F has no keepalive: the platform polls until the user touches the key).
    public static let u2fPollInterval: Duration = .milliseconds(100)

    /// Sends one CTAP1/U2F request (CTAPHID_MSG, or an APDU over NFC/CCID) and returns the raw
    /// reply (data ‖ status word). Queued with the session's CTAP2 commands.
    public func sendU2F(_ request: U2FRequest, deadline: Deadline? = nil) async throws(CTAP2Error) -> [UInt8] {
        await acquire()
        defer { release() }
        if Task.isCancelled { throw .cancelled("The \(request.instruction) request was cancelled before it was sent.") }
        let deadline = deadline ?? .after(defaultTimeout)
        let reply: [UInt8]
        do throws(TransportError) {
            reply = try await connection.transact(.u2f, payload: request.apdu, deadline: deadline, keepalive: { _ in })
        } catch {
            if error.code == .cancelled {
                throw .cancelled("The \(request.instruction) request was cancelled.", underlying: error)
            }
            throw .transport("The \(request.instruction) request failed: \(error.message)", underlying: error)
        }
        guard reply.count <= Self.unknownReplyLimit else {
            throw .messageTooLarge("The \(request.instruction) reply is \(reply.count) bytes.")
        }
        return reply
    }

    /// Sends `request` again every ``u2fPollInterval`` while the key answers "conditions not
    /// satisfied", until `deadline`; the first such answer calls `keepalive` with
    /// ``KeepaliveStatus/userPresenceNeeded``, so callers can say "touch your key".
    func sendU2FAwaitingPresence(
        _ request: U2FRequest, deadline: Deadline?, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(CTAP2Error) -> [UInt8] {
        let deadline = deadline ?? .after(defaultTimeout)
        var told = false
        while true {
            let reply = try await sendU2F(request, deadline: deadline)
            let (_, status) = try splitU2FResponse(reply, request.instruction)
            guard status == .conditionsNotSatisfied else { return reply }
            if !told {
                told = true
                keepalive(.userPresenceNeeded)
            }
            guard deadline.remaining > Self.u2fPollInterval else { throw .u2f(status, request.instruction) }
            do { try await Task.sleep(for: Self.u2fPollInterval) } catch {
                throw .cancelled("The \(request.instruction) request was cancelled while waiting for a touch.")
            }
        }
    }

    /// U2F_VERSION (FIDO U2F Raw Message Formats §6): the protocol version string, `U2F_V2`.
    public func u2fVersion(deadline: Deadline? = nil) async throws(CTAP2Error) -> String {
        let reply = try await sendU2F(.version, deadline: deadline)
        let (data, status) = try splitU2FResponse(reply, .version)
        guard status == .noError else { throw .u2f(status, .version) }
        guard data.count <= 32, let text = String(validating: data, as: UTF8.self) else {
            throw .malformed("The U2F version answer is not a short UTF-8 string.")
        }
        return text
    }

    /// U2F_REGISTER (§4): waits for the touch (polling), then parses the response.
    public func u2fRegister(
        challenge: [UInt8], application: [UInt8], deadline: Deadline? = nil,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> U2FRegistrationResponse {
        let request = try U2FRequest.register(challenge: challenge, application: application)
        let reply = try await sendU2FAwaitingPresence(request, deadline: deadline, keepalive: keepalive)
        return try U2FRegistrationResponse(reply: reply)
    }

    /// U2F_AUTHENTICATE (§5) with enforce-user-presence (waits for the touch, polling) or
    /// dont-enforce-user-presence; for check-only use ``u2fCheck(keyHandle:application:deadline:)``.
    public func u2fAuthenticate(
        _ control: U2FControl = .enforceUserPresence, challenge: [UInt8], application: [UInt8],
        keyHandle: [UInt8], deadline: Deadline? = nil,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> U2FAuthenticationResponse {
        guard control != .checkOnly else {
            throw .invalidRequest("A check-only U2F_AUTHENTICATE signs nothing; use u2fCheck.")
        }
        let request = try U2FRequest.authenticate(
            control, challenge: challenge, application: application, keyHandle: keyHandle)
        let reply = try await sendU2FAwaitingPresence(request, deadline: deadline, keepalive: keepalive)
        return try U2FAuthenticationResponse(reply: reply)
    }

    /// U2F_AUTHENTICATE check-only (§5.1): whether this key made `keyHandle` for `application`,
    /// without a touch. "Conditions not satisfied" means yes, "wrong data" no.
    public func u2fCheck(
        keyHandle: [UInt8], application: [UInt8], deadline: Deadline? = nil
    ) async throws(CTAP2Error) -> Bool {
        // The challenge is not signed in check-only mode; any 32 bytes do.
        let request = try U2FRequest.authenticate(
            .checkOnly, challenge: [UInt8](repeating: 0, count: U2FRequest.parameterSize),
            application: application, keyHandle: keyHandle)
        let reply = try await sendU2F(request, deadline: deadline)
        let (_, status) = try splitU2FResponse(reply, .authenticate)
        switch status {
        case .conditionsNotSatisfied: return true
        case .wrongData: return false
        default:
            // A key that signed on check-only (9000) broke the protocol; anything else is refused.
            throw status == .noError
                ? .malformed("The security key signed a check-only U2F_AUTHENTICATE.")
                : .u2f(status, .authenticate)
        }
    }
}
