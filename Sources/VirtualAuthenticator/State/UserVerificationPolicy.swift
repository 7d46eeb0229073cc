/// How the simulated built-in user verification (a fingerprint sensor) answers, when the key
/// has one (`uv` in ``VirtualKey/Configuration/options``).
///
/// Like ``UserPresencePolicy`` it can be changed at run time
/// (``VirtualKey/setUserVerification(_:)``). A matching finger also counts as user presence.
public enum UserVerificationPolicy: Sendable, Hashable {
    /// The enrolled finger is presented: verification succeeds and uvRetries is refilled.
    case match
    /// Another finger is presented: CTAP2_ERR_UV_INVALID, one retry used, and
    /// CTAP2_ERR_UV_BLOCKED once none is left.
    case mismatch
}
