import CBOR
import Transport

extension CTAPCommand {
    /// authenticatorClientPIN (§6.5).
    public static let clientPIN = CTAPCommand(rawValue: 0x06)
}

extension VirtualKey.CommandHandler {
    /// authenticatorClientPIN, offered when the key has a PIN/UV auth protocol.
    static let clientPIN = VirtualKey.CommandHandler(
        .clientPIN, name: "clientPIN", isOffered: { $0.supportsClientPIN }
    ) { (key, parameters, _, keepalive) async throws(VirtualKeyError) -> CBORMap? in
        try await key.clientPIN(parameters, keepalive: keepalive)
    }
}

extension VirtualKey {
    /// authenticatorClientPIN parameters (CTAP 2.1 §6.5.5).
    enum ClientPINParameter {
        static let pinUvAuthProtocol = 0x01
        static let subCommand = 0x02
        static let keyAgreement = 0x03
        static let pinUvAuthParam = 0x04
        static let newPinEnc = 0x05
        static let pinHashEnc = 0x06
        static let permissions = 0x09
        static let rpID = 0x0A
    }

    /// authenticatorClientPIN response members (CTAP 2.1 §6.5.5 "Response").
    enum ClientPINResponseMember {
        static let keyAgreement = 0x01
        static let pinUvAuthToken = 0x02
        static let pinRetries = 0x03
        static let powerCycleState = 0x04
        static let uvRetries = 0x05
    }

    /// authenticatorClientPIN subcommands (CTAP 2.1 §6.5.5).
    struct ClientPINSubcommand: RawRepresentable, Hashable, CustomStringConvertible {
        var rawValue: UInt64
        static let getPINRetries = ClientPINSubcommand(rawValue: 0x01)
        static let getKeyAgreement = ClientPINSubcommand(rawValue: 0x02)
        static let setPIN = ClientPINSubcommand(rawValue: 0x03)
        static let changePIN = ClientPINSubcommand(rawValue: 0x04)
        static let getPINToken = ClientPINSubcommand(rawValue: 0x05)
        static let getPINUVAuthTokenUsingUVWithPermissions = ClientPINSubcommand(rawValue: 0x06)
        static let getUVRetries = ClientPINSubcommand(rawValue: 0x07)
        static let getPINUVAuthTokenUsingPINWithPermissions = ClientPINSubcommand(rawValue: 0x09)
        var description: String { "0x" + String(rawValue, radix: 16) }
    }

    /// authenticatorClientPIN (CTAP 2.1 §6.5.5). Error messages never contain PINs, hashes,
    /// secrets or tokens: they are logged.
    func clientPIN(
        _ raw: ArraySlice<UInt8>, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) -> CBORMap {
        typealias P = ClientPINParameter
        let p = try CTAPParameters(request: raw, context: "clientPIN")
        guard let sub = try p.unsigned(P.subCommand) else {
            throw .rejected(.missingParameter, "clientPIN lacks its subCommand.")
        }
        let rawProtocol = try p.unsigned(P.pinUvAuthProtocol)
        // A protocol that is named must be supported, whatever the subcommand (§6.5.5.1).
        if rawProtocol != nil {
            _ = try PINProtocol.negotiate(rawProtocol, supported: configuration.pinUvAuthProtocols)
        }
        clientPINSession.tokenState.observe(now: now, limits: configuration.tokenLimits)
        switch ClientPINSubcommand(rawValue: sub) {
        case .getPINRetries:
            return [
                .int(ClientPINResponseMember.pinRetries): .int(state.pinRetries),
                .int(ClientPINResponseMember.powerCycleState): .boolean(pinEntryNeedsPowerCycle),
            ]
        case .getKeyAgreement:
            let pinProtocol = try PINProtocol.negotiate(
                rawProtocol, supported: configuration.pinUvAuthProtocols)
            let key = clientPINSession.keyAgreementKey(pinProtocol)
            return [.int(ClientPINResponseMember.keyAgreement): .map(PINProtocol.coseKey(key))]
        case .setPIN:
            try setPIN(p)
            return CBORMap()
        case .changePIN:
            try changePIN(p)
            return CBORMap()
        case .getPINToken:
            return try pinToken(p, withPermissions: false)
        case .getPINUVAuthTokenUsingPINWithPermissions where configuration.supportsPINUVAuthTokenCommands:
            return try pinToken(p, withPermissions: true)
        case .getPINUVAuthTokenUsingUVWithPermissions where configuration.supportsPINUVAuthTokenCommands:
            return try await uvToken(p, keepalive: keepalive)
        case .getUVRetries:
            guard hasUserVerificationSensor else {
                throw .rejected(.notAllowed, "This key has no built-in user verification.")
            }
            return [.int(ClientPINResponseMember.uvRetries): .int(uvRetriesLeft)]
        default:
            throw .rejected(
                .invalidSubcommand, "clientPIN subcommand \(ClientPINSubcommand(rawValue: sub)) is not known."
            )
        }
    }

    /// Whether three wrong PINs in a row block PIN entry until the next power cycle.
    var pinEntryNeedsPowerCycle: Bool {
        clientPINSession.consecutiveMismatches >= PINPolicy.maxConsecutiveMismatches
    }

    /// Whether a PIN is set.
    var pinIsSet: Bool { state.pinHash != nil }

    /// Built-in verification attempts left.
    var uvRetriesLeft: Int { min(state.uvRetries ?? configuration.maxUVRetries, configuration.maxUVRetries) }

    /// The protocol and shared secret of a request carrying the platform's key-agreement key.
    private func sharedSecret(_ p: CTAPParameters) throws(VirtualKeyError) -> (PINProtocol, [UInt8]) {
        let pinProtocol = try PINProtocol.negotiate(
            try p.unsigned(ClientPINParameter.pinUvAuthProtocol), supported: configuration.pinUvAuthProtocols)
        guard let peer = try p.nested(ClientPINParameter.keyAgreement, "keyAgreement") else {
            throw .rejected(.missingParameter, "clientPIN lacks the platform's keyAgreement.")
        }
        return (
            pinProtocol,
            try agreeSharedSecret(pinProtocol, peer: peer.map)
        )
    }

    /// setPIN (CTAP 2.1 §6.5.5.5).
    private func setPIN(_ p: CTAPParameters) throws(VirtualKeyError) {
        typealias P = ClientPINParameter
        guard try p.unsigned(P.pinUvAuthProtocol) != nil, try p.nested(P.keyAgreement, "keyAgreement") != nil,
            let newPinEnc = try p.bytes(P.newPinEnc), let param = try p.bytes(P.pinUvAuthParam)
        else { throw .rejected(.missingParameter, "setPIN lacks a required parameter.") }
        guard !pinIsSet else { throw .rejected(.notAllowed, "A PIN is already set; use changePIN.") }
        let (pinProtocol, secret) = try sharedSecret(p)
        var shared = secret
        defer { shared.zeroize() }
        guard pinProtocol.verify(key: shared, newPinEnc, signature: param) else {
            throw .rejected(.pinAuthInvalid, "setPIN's pinUvAuthParam does not verify.")
        }
        var newPIN = try decryptNewPIN(newPinEnc, pinProtocol, shared)
        defer { newPIN.zeroize() }
        state.pinHash = PINPolicy.hash(newPIN)
        state.pinLength = PINPolicy.length(newPIN)
        state.pinRetries = PINPolicy.maxRetries
        state.forcePINChange = false
        replacePersistentToken()
        try persist()
        logger.debug("PIN set")
    }

    /// changePIN (CTAP 2.1 §6.5.5.6).
    private func changePIN(_ p: CTAPParameters) throws(VirtualKeyError) {
        typealias P = ClientPINParameter
        guard try p.unsigned(P.pinUvAuthProtocol) != nil, try p.nested(P.keyAgreement, "keyAgreement") != nil,
            let pinHashEnc = try p.bytes(P.pinHashEnc), let newPinEnc = try p.bytes(P.newPinEnc),
            let param = try p.bytes(P.pinUvAuthParam)
        else { throw .rejected(.missingParameter, "changePIN lacks a required parameter.") }
        guard pinIsSet else { throw .rejected(.pinNotSet, "No PIN is set; use setPIN.") }
        try checkPINNotBlocked()
        let (negotiated, secret) = try sharedSecret(p)
        var shared = secret
        defer { shared.zeroize() }
        guard negotiated.verify(key: shared, newPinEnc + pinHashEnc, signature: param) else {
            throw .rejected(.pinAuthInvalid, "changePIN's pinUvAuthParam does not verify.")
        }
        try checkPINHash(pinHashEnc, negotiated, shared)
        var newPIN = try decryptNewPIN(newPinEnc, negotiated, shared)
        defer { newPIN.zeroize() }
        let newHash = PINPolicy.hash(newPIN)
        if state.forcePINChange, let old = state.pinHash, PINPolicy.same(old, newHash) {
            throw .rejected(
                .pinPolicyViolation, "A forced PIN change needs a PIN different from the current one.")
        }
        state.pinHash = newHash
        state.pinLength = PINPolicy.length(newPIN)
        state.forcePINChange = false
        clientPINSession.resetTokens()
        replacePersistentToken()
        try persist()
        logger.debug("PIN changed")
    }

    /// getPinToken (§6.5.5.7.1) and getPinUvAuthTokenUsingPinWithPermissions (§6.5.5.7.2).
    private func pinToken(_ p: CTAPParameters, withPermissions: Bool) throws(VirtualKeyError) -> CBORMap {
        typealias P = ClientPINParameter
        let permissionsValue = try p.unsigned(P.permissions)
        let rpID = try p.text(P.rpID)
        guard try p.unsigned(P.pinUvAuthProtocol) != nil, try p.nested(P.keyAgreement, "keyAgreement") != nil,
            let pinHashEnc = try p.bytes(P.pinHashEnc), !withPermissions || permissionsValue != nil
        else { throw .rejected(.missingParameter, "The token request lacks a required parameter.") }
        _ = try PINProtocol.negotiate(
            try p.unsigned(P.pinUvAuthProtocol), supported: configuration.pinUvAuthProtocols)
        let permissions: PINUVAuthPermissions
        if withPermissions {
            permissions = try requestedPermissions(permissionsValue, usingUV: false)
        } else {
            guard permissionsValue == nil, rpID == nil else {
                throw .rejected(.invalidParameter, "getPinToken takes no permissions or rpId.")
            }
            // Legacy tokens may make credentials and assertions (§6.5.5.7.1).
            permissions = [.makeCredential, .getAssertion]
        }
        guard pinIsSet else { throw .rejected(.pinNotSet, "No PIN is set.") }
        try checkPINNotBlocked()
        let (pinProtocol, secret) = try sharedSecret(p)
        var shared = secret
        defer { shared.zeroize() }
        try checkPINHash(pinHashEnc, pinProtocol, shared)
        if state.forcePINChange {
            // getPinToken predates PIN_POLICY_VIOLATION and answers PIN_INVALID (§6.5.5.7.1 step 11).
            throw .rejected(
                withPermissions ? .pinPolicyViolation : .pinInvalid,
                "The PIN must be changed before a token is issued.")
        }
        return try issueToken(pinProtocol, shared, permissions: permissions, rpID: rpID, userIsPresent: false)
    }

    /// getPinUvAuthTokenUsingUvWithPermissions (CTAP 2.1 §6.5.5.7.3).
    private func uvToken(
        _ p: CTAPParameters, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) -> CBORMap {
        typealias P = ClientPINParameter
        let permissionsValue = try p.unsigned(P.permissions)
        let rpID = try p.text(P.rpID)
        guard try p.unsigned(P.pinUvAuthProtocol) != nil, try p.nested(P.keyAgreement, "keyAgreement") != nil,
            permissionsValue != nil
        else { throw .rejected(.missingParameter, "The token request lacks a required parameter.") }
        let permissions = try requestedPermissions(permissionsValue, usingUV: true)
        guard hasBuiltInUserVerification else {
            throw .rejected(.notAllowed, "This key has no enabled built-in user verification.")
        }
        guard uvRetriesLeft > 0 else {
            throw .rejected(
                .uvBlocked, "Built-in user verification is blocked; use the PIN or reset the key.")
        }
        let (pinProtocol, secret) = try sharedSecret(p)
        var shared = secret
        defer { shared.zeroize() }
        try await performBuiltInUserVerification(keepalive: keepalive)
        return try issueToken(pinProtocol, shared, permissions: permissions, rpID: rpID, userIsPresent: true)
    }

    /// The permissions of a token request: zero is CTAP1_ERR_INVALID_PARAMETER, one this key
    /// does not grant CTAP2_ERR_UNAUTHORIZED_PERMISSION, undefined bits are ignored
    /// (§6.5.5.7.2 steps 3–4, §6.5.5.7.3 steps 3–4).
    private func requestedPermissions(
        _ value: UInt64?, usingUV: Bool
    ) throws(VirtualKeyError) -> PINUVAuthPermissions {
        guard let value, value != 0 else {
            throw .rejected(.invalidParameter, "A token was requested with no permissions.")
        }
        let permissions = PINUVAuthPermissions(rawValue: value).intersection(.defined)
        guard configuration.grantablePermissions(usingUV: usingUV).isSuperset(of: permissions) else {
            throw .rejected(
                .unauthorizedPermission,
                "Permissions 0x\(String(permissions.rawValue, radix: 16)) include some this key does not offer."
            )
        }
        // The persistent token is a token of its own: pcmr comes alone (CTAP 2.2 §6.5.5.7).
        if permissions.contains(.persistentCredentialManagementReadOnly),
            permissions != .persistentCredentialManagementReadOnly
        {
            throw .rejected(.invalidParameter, "The pcmr permission cannot be combined with others.")
        }
        return permissions
    }

    /// A new token for every protocol, begun with these permissions, sent encrypted under
    /// the shared secret (§6.5.5.7.2 steps 8–12).
    private func issueToken(
        _ pinProtocol: PINProtocol, _ shared: [UInt8], permissions: PINUVAuthPermissions, rpID: String?,
        userIsPresent: Bool
    ) throws(VirtualKeyError) -> CBORMap {
        if permissions == .persistentCredentialManagementReadOnly {
            return try issuePersistentToken(pinProtocol, shared)
        }
        clientPINSession.resetTokens()
        clientPINSession.tokenState.begin(
            userIsPresent: userIsPresent, permissions: permissions, rpID: rpID, now: now)
        recordIssuedTokens()
        let encrypted = try pinProtocol.encrypt(key: shared, clientPINSession.token(pinProtocol))
        logger.debug("pinUvAuthToken issued", metadata: ["permissions": "\(permissions.rawValue)"])
        return [.int(ClientPINResponseMember.pinUvAuthToken): .byteString(encrypted)]
    }

    /// PIN_BLOCKED when no retries are left, PIN_AUTH_BLOCKED until a power cycle after three
    /// wrong PINs in a row.
    private func checkPINNotBlocked() throws(VirtualKeyError) {
        if state.pinRetries == 0 {
            throw .rejected(.pinBlocked, "The PIN is blocked; only a reset makes the key usable again.")
        }
        if pinEntryNeedsPowerCycle {
            throw .rejected(.pinAuthBlocked, "Three wrong PINs in a row: unplug and replug the key.")
        }
    }

    /// Checks pinHashEnc against the stored PIN, spending a retry first and refunding all on a
    /// match (§6.5.5.7.2 steps 6–7). A mismatch makes new key-agreement keys.
    private func checkPINHash(
        _ pinHashEnc: [UInt8], _ pinProtocol: PINProtocol, _ shared: [UInt8]
    ) throws(VirtualKeyError) {
        var decrypted = try pinProtocol.decrypt(key: shared, pinHashEnc)
        defer { decrypted.zeroize() }
        state.pinRetries = max(state.pinRetries - 1, 0)
        guard let stored = state.pinHash, decrypted.count == PINPolicy.hashLength,
            PINPolicy.same(stored, decrypted)
        else {
            clientPINSession.regenerateKeyAgreementKeys()
            clientPINSession.consecutiveMismatches += 1
            try persist()
            if state.pinRetries == 0 {
                throw .rejected(.pinBlocked, "Wrong PIN; no retries are left and the PIN is blocked.")
            }
            if pinEntryNeedsPowerCycle {
                throw .rejected(
                    .pinAuthBlocked, "Wrong PIN, three times in a row: unplug and replug the key.")
            }
            throw .rejected(.pinInvalid, "Wrong PIN; \(state.pinRetries) retries are left.")
        }
        clientPINSession.consecutiveMismatches = 0
        state.pinRetries = PINPolicy.maxRetries
        uvCountSinceLastPINEntry = 0
        try persist()
    }

    /// The new PIN inside newPinEnc, checked against the policy (§6.5.5.5 steps 5–7).
    private func decryptNewPIN(
        _ newPinEnc: [UInt8], _ pinProtocol: PINProtocol, _ shared: [UInt8]
    ) throws(VirtualKeyError) -> [UInt8] {
        var padded = try pinProtocol.decrypt(key: shared, newPinEnc)
        defer { padded.zeroize() }
        let pin = try PINPolicy.unpad(padded)
        if let reason = PINPolicy.check(pin, minLength: currentMinPINLength)
            ?? configuration.ctap22.pinRefusal(pin)
        {
            throw .rejected(.pinPolicyViolation, reason)
        }
        return pin
    }
}
