import Transport

extension VirtualKey {
    /// Whether the key is "protected by some form of user verification" (CTAP 2.1 §6.1.2
    /// step 11): a PIN is set or built-in verification is enabled.
    var isProtectedByUserVerification: Bool {
        (configuration.supportsClientPIN && pinIsSet) || hasBuiltInUserVerification
    }

    /// performBuiltInUv() (CTAP 2.1 §6.5.5.8 and §6.1.2 step 11.2): the simulated fingerprint
    /// sensor answers according to ``userVerification``. A match refills uvRetries and counts
    /// as user presence; a mismatch spends a retry.
    func performBuiltInUserVerification(
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) {
        guard hasBuiltInUserVerification else {
            throw .rejected(.invalidOption, "This key has no enabled built-in user verification.")
        }
        guard uvRetriesLeft > 0 else {
            throw .rejected(
                .uvBlocked, "Built-in user verification is blocked; use the PIN or reset the key.")
        }
        if Task.isCancelled {
            throw .rejected(.keepaliveCancel, "The request was cancelled during user verification.")
        }
        keepalive(.userPresenceNeeded)
        switch userVerification {
        case .match:
            countBuiltInVerification()
            if state.uvRetries != nil {
                state.uvRetries = nil
                try persist()
            }
        case .mismatch:
            let left = uvRetriesLeft - 1
            state.uvRetries = left
            try persist()
            if left == 0 {
                throw .rejected(.uvBlocked, "User verification failed and is now blocked.")
            }
            throw .rejected(.uvInvalid, "User verification failed; \(left) retries are left.")
        }
    }

    /// The zero-length pinUvAuthParam probe (CTAP 2.1 §6.1.2 step 1, §6.2.2 step 1): after a
    /// touch, PIN_NOT_SET or PIN_INVALID tells the platform whether a PIN is set.
    func answerPINProbe(keepalive: @escaping @Sendable (KeepaliveStatus) -> Void)
        async throws(VirtualKeyError) -> Never
    {
        do {
            try await collectUserPresence(keepalive: keepalive)
        } catch {
            if error.status == .keepaliveCancel { throw error }
            throw .rejected(.operationDenied, "The user did not confirm the key.")
        }
        if configuration.supportsClientPIN && pinIsSet {
            throw .rejected(.pinInvalid, "A PIN is set on this key.")
        }
        throw .rejected(.pinNotSet, "No PIN is set on this key.")
    }

    /// Verifies a pinUvAuthParam made with the current pinUvAuthToken for a command needing
    /// `permission` (CTAP 2.1 §6.1.2 step 11.1, §6.2.2 step 6.1; the same checks serve
    /// credential management, large blobs and authenticatorConfig). Binds the token to `rpID`
    /// when it has no permissions RP ID yet; every failure is CTAP2_ERR_PIN_AUTH_INVALID.
    ///
    /// - Parameters:
    ///   - param: the request's pinUvAuthParam.
    ///   - pinProtocol: the request's pinUvAuthProtocol (missing: MISSING_PARAMETER;
    ///     unsupported: INVALID_PARAMETER).
    ///   - message: what the platform authenticated (clientDataHash for mc and ga).
    ///   - rpID: the RP ID the request acts for, or nil for commands not bound to one.
    ///   - bindsRP: whether a token without a permissions RP ID becomes bound to `rpID`
    ///     (makeCredential and getAssertion; credential management only checks).
    func verifyPinUvAuthParam(
        _ param: [UInt8], protocol pinProtocol: UInt64?, message: [UInt8],
        permission: PINUVAuthPermissions, rpID: String?, bindsRP: Bool = true,
        requiresUserVerifiedFlag: Bool = true
    ) throws(VirtualKeyError) {
        let chosen = try PINProtocol.negotiate(pinProtocol, supported: configuration.pinUvAuthProtocols)
        clientPINSession.tokenState.observe(now: now, limits: configuration.tokenLimits)
        let token = clientPINSession.tokenState
        guard token.inUse else {
            throw .rejected(.pinAuthInvalid, "No pinUvAuthToken is in use (none was issued, or it expired).")
        }
        guard chosen.verify(key: clientPINSession.token(chosen), message, signature: param) else {
            throw .rejected(.pinAuthInvalid, "The pinUvAuthParam does not verify.")
        }
        guard token.permissions.isSuperset(of: permission) else {
            throw .rejected(.pinAuthInvalid, "The pinUvAuthToken lacks the permission this command needs.")
        }
        if let rpID, let bound = token.rpID, bound != rpID {
            throw .rejected(.pinAuthInvalid, "The pinUvAuthToken is bound to another relying party.")
        }
        guard token.userVerifiedFlag || !requiresUserVerifiedFlag else {
            throw .rejected(.pinAuthInvalid, "The pinUvAuthToken no longer carries user verification.")
        }
        clientPINSession.tokenState.markUsed()
        if bindsRP, let rpID { clientPINSession.tokenState.bind(rpID: rpID) }
    }

    /// How makeCredential and getAssertion established the user's verification and presence.
    struct VerificationOutcome {
        /// The UV flag of the response.
        var userVerified = false
        /// Presence already shown (built-in UV, or a token with its userPresent flag).
        var userPresent = false
        /// Whether a pinUvAuthParam was used.
        var usedToken = false
    }

    /// Steps 1–2 of makeCredential (CTAP 2.1 §6.1.2) and getAssertion (§6.2.2): the
    /// zero-length probe, then a pinUvAuthParam must name a supported protocol.
    func checkPINProbeAndProtocol(
        _ param: [UInt8]?, protocol pinProtocol: UInt64?,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) {
        guard let param else { return }
        if param.isEmpty { try await answerPINProbe(keepalive: keepalive) }
        guard pinProtocol != nil else {
            throw .rejected(.missingParameter, "pinUvAuthParam came without pinUvAuthProtocol.")
        }
        _ = try PINProtocol.negotiate(pinProtocol, supported: configuration.pinUvAuthProtocols)
    }

    /// Steps 5–8 and 11 of makeCredential (CTAP 2.1 §6.1.2) and 5–6 of getAssertion
    /// (§6.2.2), after ``checkPINProbeAndProtocol(_:protocol:keepalive:)``: the token or
    /// built-in UV, or CTAP2_ERR_PUAT_REQUIRED.
    ///
    /// - Parameters:
    ///   - uvOption: the request's "uv" option (ignored when a pinUvAuthParam is present).
    ///   - puatRequired: whether a protected key must refuse a request without verification
    ///     (makeCredential, §6.1.2 steps 7–8).
    func establishVerification(
        param: [UInt8]?, protocol pinProtocol: UInt64?, uvOption: Bool, clientDataHash: [UInt8],
        permission: PINUVAuthPermissions, rpID: String, puatRequired: Bool,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) -> VerificationOutcome {
        var outcome = VerificationOutcome()
        if let param {
            guard isProtectedByUserVerification else {
                throw .rejected(.pinNotSet, "No PIN is set and no built-in verification is enabled.")
            }
            try verifyPinUvAuthParam(
                param, protocol: pinProtocol, message: clientDataHash, permission: permission, rpID: rpID)
            outcome.userVerified = true
            outcome.usedToken = true
            outcome.userPresent = clientPINSession.tokenState.userPresentFlag
            return outcome
        }
        if uvOption {
            guard hasBuiltInUserVerification else {
                throw .rejected(.invalidOption, "This key has no built-in user verification.")
            }
            try await performBuiltInUserVerification(keepalive: keepalive)
            outcome.userVerified = true
            outcome.userPresent = true
            return outcome
        }
        if puatRequired {
            throw .rejected(.puatRequired, "This key is protected: the request needs a pinUvAuthParam.")
        }
        return outcome
    }
}
