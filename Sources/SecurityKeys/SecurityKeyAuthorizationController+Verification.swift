import CTAP2
import Transport

/// How a command will verify the user: a pinUvAuthToken, the CTAP 2.0 `uv` option, or not at all.
struct UserVerificationPlan: Sendable {
    var token: PINUVAuthToken?
    var uvOption = false
}

extension SecurityKeyAuthorizationController {
    /// Decides as browsers do whether to verify the user and obtains the means:
    /// 'discouraged' never asks (unless the key refuses makeCredential without it), 'preferred'
    /// verifies when a PIN or built-in UV is configured, 'required' fails with what to do when
    /// neither is. Built-in UV is tried first; when it is blocked, the PIN.
    func userVerification(
        key: ProviderKey, preference: UserVerificationPreference, keyDemandsIt: Bool,
        permissions: PINUVAuthTokenPermissions, rpID: String, deadline: Deadline
    ) async throws(SecurityKeyError) -> UserVerificationPlan {
        let info = key.info
        let pinSet = info.options[.clientPIN] == true
        let uvReady = info.options[.userVerification] == true
        let wanted: Bool
        switch preference {
        case .required:
            guard pinSet || uvReady else {
                if info.options[.clientPIN] == false {
                    throw SecurityKeyError(
                        .pinNotSet,
                        "The site requires user verification and this security key has no PIN: set a PIN on it (securitykey pin set) and try again."
                    )
                }
                throw SecurityKeyError(
                    .notHandled, "The site requires user verification, which this security key cannot do.")
            }
            wanted = true
        case .preferred: wanted = pinSet || uvReady
        default: wanted = keyDemandsIt && (pinSet || uvReady)
        }
        guard wanted else { return UserVerificationPlan() }

        let tokens = info.isEnabled(.pinUVAuthToken)
        if uvReady && !tokens { return UserVerificationPlan(uvOption: true) }
        if uvReady {
            do throws(SecurityKeyError) {
                return UserVerificationPlan(
                    token: try await builtInVerification(
                        key: key, permissions: permissions, rpID: rpID, deadline: deadline))
            } catch  where error.code == .uvBlocked && pinSet {
                logger.info("built-in user verification is blocked; asking for the PIN")
            }
        }
        return UserVerificationPlan(
            token: try await pinVerification(
                key: key, permissions: permissions, rpID: rpID, deadline: deadline))
    }

    private func builtInVerification(
        key: ProviderKey, permissions: PINUVAuthTokenPermissions, rpID: String,
        deadline: Deadline
    ) async throws(SecurityKeyError) -> PINUVAuthToken {
        let clientPIN: ClientPIN
        do { clientPIN = try ClientPIN(session: key.session, info: key.info, logger: logger) } catch {
            throw SecurityKeyError(error)
        }
        while true {
            do throws(CTAP2Error) {
                return try await clientPIN.uvAuthToken(
                    permissions: permissions, rpID: rpID, deadline: deadline,
                    keepalive: touchObserver(key))
            } catch  where error.code == .uvInvalid && (error.retriesLeft ?? 1) > 0 {
                emit(.userVerificationRetry(attemptsLeft: error.retriesLeft))
            } catch  where error.code == .uvInvalid {
                // No attempt left: the sensor is blocked now, so the PIN takes over.
                throw SecurityKeyError(
                    .uvBlocked,
                    "Built-in user verification failed too often and is blocked: use the PIN instead.",
                    underlying: error)
            } catch {
                throw SecurityKeyError(error)
            }
        }
    }

    private func pinVerification(
        key: ProviderKey, permissions: PINUVAuthTokenPermissions, rpID: String,
        deadline: Deadline
    ) async throws(SecurityKeyError) -> PINUVAuthToken {
        guard let interaction else {
            throw SecurityKeyError(
                .notInteractive, "The security key needs its PIN, and this request cannot ask for one.")
        }
        let clientPIN: ClientPIN
        var attemptsLeft: Int?
        do throws(CTAP2Error) {
            clientPIN = try ClientPIN(session: key.session, info: key.info, logger: logger)
            let retries = try await clientPIN.pinRetries(deadline: deadline)
            attemptsLeft = retries.retries
        } catch {
            throw SecurityKeyError(error)
        }
        if attemptsLeft == 0 {
            throw SecurityKeyError(
                .pinBlocked,
                "The PIN is blocked: no attempts are left, and only resetting the key (which erases its credentials) makes it usable again."
            )
        }
        while true {
            emit(.pinNeeded(attemptsLeft: attemptsLeft))
            guard let pin = await interaction.pin(deviceURI: key.uri, attemptsLeft: attemptsLeft) else {
                throw SecurityKeyError(.canceled, "The PIN prompt was cancelled.")
            }
            if Task.isCancelled { throw SecurityKeyError(.canceled, "The request was cancelled.") }
            do throws(CTAP2Error) {
                return try await clientPIN.pinUVAuthToken(
                    pin: pin, permissions: permissions, rpID: rpID, deadline: deadline)
            } catch  where error.code == .pinInvalid && (error.retriesLeft ?? 1) > 0 {
                attemptsLeft = error.retriesLeft
            } catch {
                throw SecurityKeyError(error)
            }
        }
    }
}
