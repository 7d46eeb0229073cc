import Authenticators
import CTAP2
import Transport

/// How a command will verify the user: a pinUvAuthToken, the CTAP 2.0 `uv` option, or not at all.
struct UserVerificationPlan: Sendable {
    var token: PINUVAuthToken?
    var uvOption = false
}

extension SecurityKeyAuthorizationController {
    /// Decides as browsers do whether to verify the user, then lets the device layer obtain the
    /// means: 'discouraged' never asks (unless the key refuses makeCredential without it),
    /// 'preferred' verifies when a PIN or built-in UV is configured, 'required' fails with what
    /// to do when neither is.
    func userVerification(
        key: ProviderKey, preference: UserVerificationPreference, keyDemandsIt: Bool,
        permissions: PINUVAuthTokenPermissions, rpID: String, deadline: Deadline
    ) async throws(SecurityKeyError) -> UserVerificationPlan {
        let info = key.info
        let configured = info.options.isEnabled(.clientPIN) || info.options.isEnabled(.userVerification)
        let wanted: Bool
        switch preference {
        case .required:
            guard configured else {
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
        case .preferred: wanted = configured
        default: wanted = keyDemandsIt && configured
        }
        guard wanted else { return UserVerificationPlan() }
        do throws(AuthenticatorError) {
            switch try await key.authenticator.verifyUser(
                permissions: permissions, rpID: rpID, interaction: providerInteraction, deadline: deadline)
            {
            case .token(let token): return UserVerificationPlan(token: token)
            case .uvOption: return UserVerificationPlan(uvOption: true)
            case .none: return UserVerificationPlan()
            }
        } catch {
            throw SecurityKeyError(error)
        }
    }
}
