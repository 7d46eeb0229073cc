/// Where an authenticator's status becomes an error code (CTAP 2.1 §8.2 "Status codes"): the
/// statuses any command may return (and those callers match on whatever the command) are
/// classified here; those only one command returns (CTAP2_ERR_LARGE_BLOB_STORAGE_FULL, ...) by
/// that command's ``CTAP2Request/explain(_:)`` in its own folder, which the session applies next.
///
/// Every layer above switches on ``CTAP2Error/Code``; none reads the raw ``CTAPStatus`` to decide
/// what went wrong. Statuses without a code of their own keep ``CTAP2Error/Code/authenticatorStatus``
/// and the status's own sentence.
extension CTAP2Error {
    /// The code and the sentence for a non-zero status.
    public static func classify(_ status: CTAPStatus) -> (code: Code, message: String) {
        switch status {
        case .invalidCommand: (.invalidCommand, status.message)
        case .timeout: (.messageTimeout, status.message)
        case .unsupportedExtension: (.unsupportedExtension, status.message)
        case .credentialExcluded: (.credentialExcluded, status.message)
        case .unsupportedAlgorithm: (.unsupportedAlgorithm, status.message)
        case .operationDenied: (.operationDenied, status.message)
        case .unsupportedOption: (.unsupportedOption, status.message)
        case .keepaliveCancel: (.keepaliveCancel, status.message)
        case .noCredentials: (.noCredentials, status.message)
        case .userActionTimeout, .actionTimeout: (.userActionTimeout, status.message)
        case .notAllowed: (.notAllowed, status.message)
        case .pinInvalid: (.pinInvalid, "The PIN is wrong.")
        case .pinBlocked:
            (
                .pinBlocked,
                "The PIN is blocked: no attempts are left, and only resetting the key (which erases its credentials) makes it usable again."
            )
        case .pinAuthInvalid:
            (
                .pinAuthInvalid,
                "The key refused the PIN/UV authentication: get a new PIN/UV token and try again."
            )
        case .pinAuthBlocked:
            (.pinAuthBlocked, "Too many wrong PINs: remove and re-insert the key before trying again.")
        case .pinNotSet: (.pinNotSet, "No PIN is set on this key: set one first.")
        case .pinUvAuthTokenRequired:
            (.pinRequired, "This operation needs the key's PIN or built-in user verification.")
        case .pinPolicyViolation:
            (.pinPolicyViolation, "The new PIN does not meet this key's PIN policy; choose another.")
        case .pinTokenExpired: (.pinTokenExpired, status.message)
        case .uvBlocked: (.uvBlocked, "Built-in user verification is blocked: use the PIN instead.")
        case .uvInvalid: (.uvInvalid, "User verification failed.")
        case .unauthorizedPermission:
            (
                .unauthorizedPermission,
                "The PIN/UV token does not permit this operation: get a token with the right permission."
            )
        default: (.authenticatorStatus, status.message)
        }
    }
}
