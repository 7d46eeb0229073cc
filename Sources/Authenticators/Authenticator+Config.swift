import CTAP2
import Transport

/// authenticatorConfig (CTAP 2.1 §6.11) through the device layer: each method gets a token with
/// the acfg permission (built-in UV where the key allows it for config, `uvAcfg`; else the PIN),
/// sends one subcommand, wipes the token and reads getInfo again so ``info`` shows the change.
/// A key with neither a PIN nor built-in UV takes the command without a token (§6.11).
extension Authenticator {
    /// enableEnterpriseAttestation.
    public func enableEnterpriseAttestation(interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError)
    {
        try await withConfig(interaction: interaction, deadline: deadline) { (config) throws(CTAP2Error) in
            try await config.enableEnterpriseAttestation(deadline: deadline)
        }
    }

    /// toggleAlwaysUv; returns whether alwaysUv is on now, as the key's getInfo reports it.
    @discardableResult
    public func toggleAlwaysUV(interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError) -> Bool
    {
        _ = try await withConfig(interaction: interaction, deadline: deadline) {
            (config) throws(CTAP2Error) in
            try await config.toggleAlwaysUV(deadline: deadline)
        }
        return info.options.isEnabled(.alwaysUV)
    }

    /// Turns alwaysUv on or off: toggleAlwaysUv is sent only when the key's getInfo says it is
    /// not so already (no PIN is asked then). Returns whether it is on now, as getInfo reports
    /// it, and whether anything was sent.
    public func setAlwaysUV(_ on: Bool, interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError) -> (isOn: Bool, changed: Bool)
    {
        guard info.options.isSupported(.alwaysUV) else {
            throw AuthenticatorError(.notSupported, "The security key has no always-UV setting.", deviceURI: uri)
        }
        let now = info.options.isEnabled(.alwaysUV)
        guard now != on else { return (now, false) }
        return (try await toggleAlwaysUV(interaction: interaction, deadline: deadline), true)
    }

    /// setMinPINLength: raises the minimum PIN length, names the RP IDs that may read it, and
    /// with `forceChangePIN` makes the key demand a new PIN before its next use.
    public func setMinPINLength(
        _ newMinPINLength: UInt64? = nil, rpIDs: [String]? = nil, forceChangePIN: Bool = false,
        interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) {
        try await withConfig(interaction: interaction, deadline: deadline) { (config) throws(CTAP2Error) in
            try await config.setMinPINLength(
                newMinPINLength, minPINLengthRPIDs: rpIDs, forceChangePIN: forceChangePIN, deadline: deadline)
        }
    }

    /// Runs `body` with an ``AuthenticatorConfig`` holding a fresh acfg token (nil on an
    /// unprotected key), wipes the token, then refreshes getInfo.
    @discardableResult
    public func withConfig<T: Sendable>(
        interaction: (any AuthenticatorInteraction)?, deadline: Deadline,
        _ body: @Sendable (AuthenticatorConfig) async throws(CTAP2Error) -> T
    ) async throws(AuthenticatorError) -> T {
        guard info.isEnabled(.authenticatorConfig) else {
            throw AuthenticatorError(
                .notSupported, "The security key does not support configuration commands (authnrCfg).",
                deviceURI: uri)
        }
        // One ceremony: the key is held from the token to the last command (Authenticator+Ceremony.swift).
        let result = try await withCeremony { () throws(AuthenticatorError) -> T in
            let token = try await configToken(interaction: interaction, deadline: deadline)
            defer { token?.wipe() }
            do throws(CTAP2Error) {
                let config = try AuthenticatorConfig(session: session, info: info, token: token, logger: logger)
                return try await body(config)
            } catch {
                throw AuthenticatorError(error, deviceURI: uri)
            }
        }
        try await refreshInfo(deadline: deadline)
        return result
    }

    /// The acfg token, or nil when the key verifies nobody (no PIN set, no built-in UV).
    func configToken(interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError) -> PINUVAuthToken?
    {
        let pinSet = info.options.isEnabled(.clientPIN)
        let uvReady = info.options.isEnabled(.userVerification)
        if !pinSet && !uvReady { return nil }
        if uvReady && info.options.isEnabled(.uvAuthenticatorConfig)
            && info.options.isEnabled(.pinUVAuthToken)
        {
            if case .token(let token) = try await verifyUser(
                permissions: [.authenticatorConfiguration], rpID: nil, interaction: interaction,
                deadline: deadline)
            {
                return token
            }
        }
        guard pinSet else {
            throw AuthenticatorError(
                .pinNotSet,
                "The security key accepts configuration commands only with its PIN: set a PIN first.",
                deviceURI: uri)
        }
        return try await pinToken(
            permissions: [.authenticatorConfiguration], rpID: nil, interaction: interaction,
            deadline: deadline)
    }
}
