import CTAP2
import Transport

/// How a command will carry user verification: a pinUvAuthToken, the CTAP 2.0 `uv` option
/// (built-in UV on a key without tokens), or none.
public enum UserVerification: Sendable {
    /// A pinUvAuthToken; the caller wipes it when done.
    case token(PINUVAuthToken)
    /// Set the `uv` option on the command (a CTAP 2.0 key with built-in UV and no tokens).
    case uvOption
    /// No verification.
    case none

    /// The token, if this is one.
    public var token: PINUVAuthToken? {
        if case .token(let token) = self { return token }
        return nil
    }

    /// Wipes the token, if this holds one.
    public func wipe() { token?.wipe() }
}

extension Authenticator {
    /// Whether the key can verify the user now: a PIN is set or built-in UV is configured.
    public var canVerifyUser: Bool {
        info.options.isEnabled(.clientPIN) || info.options.isEnabled(.userVerification)
    }

    /// Verifies the user and returns the means to prove it to a command, with `permissions`
    /// bound to `rpID` where given (CTAP 2.1 §6.5.5.7).
    ///
    /// Built-in UV comes first where the key has it (fingerprint retries are reported through
    /// `interaction`); when it is blocked, or failed as often as the key's
    /// preferredPlatformUvAttempts (CTAP 2.1 §6.4) and a PIN is set, the PIN. The PIN path reads the free retry counter
    /// before asking, asks `interaction` for each attempt and never re-sends a PIN the key
    /// refused, so no attempt is spent that the user did not make. A key that demands a new PIN
    /// (forcePINChange) gets one first: the current PIN, then the new PIN, then the token with
    /// the new PIN.
    public func verifyUser(
        permissions: PINUVAuthTokenPermissions, rpID: String?, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline
    ) async throws(AuthenticatorError) -> UserVerification {
        let pinSet = info.options.isEnabled(.clientPIN)
        let uvReady = info.options.isEnabled(.userVerification)
        guard pinSet || uvReady else {
            if info.options.isSupported(.clientPIN) {
                throw AuthenticatorError(
                    .pinNotSet,
                    "The security key has no PIN: set one (securitykey pin set) to verify the user.",
                    deviceURI: uri)
            }
            throw AuthenticatorError(
                .pinUVNotSupported, "The security key cannot verify the user (no PIN, no built-in UV).",
                deviceURI: uri)
        }
        let tokens = info.options.isEnabled(.pinUVAuthToken)
        if uvReady && !tokens { return .uvOption }
        if uvReady {
            do throws(AuthenticatorError) {
                if let token = try await builtInToken(
                    permissions: permissions, rpID: rpID, interaction: interaction, deadline: deadline,
                    attempts: pinSet ? preferredPlatformUVAttempts : nil)
                {
                    return .token(token)
                }
                logger.info("built-in user verification failed as often as the key prefers; asking for the PIN")
                interaction?.activity(.fallingBackToPIN(deviceURI: uri))
            } catch where error.code == .uvBlocked && pinSet {
                logger.info("built-in user verification is blocked; asking for the PIN")
                interaction?.activity(.fallingBackToPIN(deviceURI: uri))
            }
        }
        return .token(
            try await pinToken(permissions: permissions, rpID: rpID, interaction: interaction, deadline: deadline))
    }

    /// How many built-in verifications to try before falling back to the PIN: the key's
    /// preferredPlatformUvAttempts (CTAP 2.1 §6.4), or 3 when it states none, as browsers do.
    public var preferredPlatformUVAttempts: Int {
        guard let stated = info.preferredPlatformUVAttempts, stated > 0 else { return 3 }
        return Int(clamping: stated)
    }

    /// A token from built-in UV, letting the user retry while the key allows; nil once
    /// `attempts` verifications failed (the caller falls back to the PIN), never when it is nil.
    func builtInToken(
        permissions: PINUVAuthTokenPermissions, rpID: String?, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline, attempts: Int? = nil
    ) async throws(AuthenticatorError) -> PINUVAuthToken? {
        let clientPIN = try clientPIN()
        try await holdForCeremony(deadline: deadline)
        var failed = 0
        while true {
            do throws(CTAP2Error) {
                return try await clientPIN.uvAuthToken(
                    permissions: permissions, rpID: rpID, deadline: deadline,
                    keepalive: touchObserver(interaction))
            } catch where error.code == .uvInvalid && (error.retriesLeft ?? 1) > 0 {
                failed += 1
                if let attempts, failed >= attempts { return nil }
                interaction?.activity(.userVerificationRetry(deviceURI: uri, attemptsLeft: error.retriesLeft))
            } catch where error.code == .uvInvalid {
                // No attempt left: the sensor is blocked now.
                throw AuthenticatorError(
                    .uvBlocked, "Built-in user verification failed too often and is blocked: use the PIN instead.",
                    deviceURI: uri, underlying: error)
            } catch {
                throw AuthenticatorError(error, deviceURI: uri)
            }
        }
    }

    /// A token from the PIN the user types; asks again after a wrong PIN while attempts remain.
    public func pinToken(
        permissions: PINUVAuthTokenPermissions, rpID: String?, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline
    ) async throws(AuthenticatorError) -> PINUVAuthToken {
        guard let interaction, interaction.canPrompt else {
            throw AuthenticatorError(
                .notInteractive, "The security key needs its PIN, and nobody can be asked for it.", deviceURI: uri)
        }
        var attemptsLeft = try await checkedPINRetries(deadline: deadline)
        if info.forcePINChange == true {
            return try await forcedPINChange(
                permissions: permissions, rpID: rpID, attemptsLeft: attemptsLeft, interaction: interaction,
                deadline: deadline)
        }
        let clientPIN = try clientPIN()
        while true {
            let prompt = PINPrompt(purpose: .verify, device: descriptor, attemptsLeft: attemptsLeft)
            guard let pin = await interaction.pin(prompt) else {
                throw AuthenticatorError(.cancelled, "The PIN prompt was cancelled.", deviceURI: uri)
            }
            if Task.isCancelled { throw .cancelled(deviceURI: uri) }
            // Held from here, after the prompt, to the end of the ceremony (Authenticator+Ceremony.swift).
            try await holdForCeremony(deadline: deadline)
            do throws(CTAP2Error) {
                return try await clientPIN.pinUVAuthToken(
                    pin: pin, permissions: permissions, rpID: rpID, deadline: deadline)
            } catch where error.code == .pinInvalid && (error.retriesLeft ?? 1) > 0 {
                attemptsLeft = error.retriesLeft
                // Not held while the user types again.
                await Self.releaseCeremonyHoldForPrompt()
            } catch {
                throw AuthenticatorError(error, deviceURI: uri)
            }
        }
    }

    /// PIN attempts left, refusing at once (without a prompt) when none are.
    func checkedPINRetries(deadline: Deadline) async throws(AuthenticatorError) -> Int? {
        let retries = try await pinRetries(deadline: deadline)
        if retries.retries == 0 {
            throw AuthenticatorError.pinBlocked(deviceURI: uri)
        }
        return retries.retries
    }

    /// The key demands a new PIN: change it (current, then new), refresh getInfo, and get the
    /// token with the new PIN.
    private func forcedPINChange(
        permissions: PINUVAuthTokenPermissions, rpID: String?, attemptsLeft: Int?,
        interaction: any AuthenticatorInteraction, deadline: Deadline
    ) async throws(AuthenticatorError) -> PINUVAuthToken {
        var attemptsLeft = attemptsLeft
        let minimum = Int(clamping: info.minPINLength ?? 4)
        guard
            let newPIN = await interaction.pin(
                PINPrompt(purpose: .newPIN, device: descriptor, attemptsLeft: nil, minimumLength: minimum))
        else {
            throw AuthenticatorError(.cancelled, "The new PIN prompt was cancelled.", deviceURI: uri)
        }
        let clientPIN = try clientPIN()
        while true {
            let prompt = PINPrompt(purpose: .currentForChange, device: descriptor, attemptsLeft: attemptsLeft)
            guard let current = await interaction.pin(prompt) else {
                throw AuthenticatorError(.cancelled, "The PIN prompt was cancelled.", deviceURI: uri)
            }
            if Task.isCancelled { throw .cancelled(deviceURI: uri) }
            try await holdForCeremony(deadline: deadline)
            do throws(CTAP2Error) {
                try await clientPIN.changePIN(from: current, to: newPIN, deadline: deadline)
                break
            } catch where error.code == .pinInvalid && (error.retriesLeft ?? 1) > 0 {
                attemptsLeft = error.retriesLeft
                await Self.releaseCeremonyHoldForPrompt()
            } catch {
                throw AuthenticatorError(error, deviceURI: uri)
            }
        }
        logger.info("the PIN was changed as the key demanded", metadata: ["device": "\(uri)"])
        try await refreshInfo(deadline: deadline)
        let refreshed = try self.clientPIN()
        do throws(CTAP2Error) {
            return try await refreshed.pinUVAuthToken(
                pin: newPIN, permissions: permissions, rpID: rpID, deadline: deadline)
        } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }
}
