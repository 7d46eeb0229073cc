/// How the virtual key answers when a request needs user presence (a touch).
///
/// The policy can be changed while a request waits (``VirtualKey/setUserPresence(_:)``); the
/// waiting request sees the change within one keepalive interval.
public enum UserPresencePolicy: Sendable, Hashable {
    /// The user touches the key at once.
    case approve
    /// The user touches the key after this delay; keepalives report `userPresenceNeeded` meanwhile.
    case approveAfter(Duration)
    /// The user declines: CTAP2_ERR_OPERATION_DENIED.
    case deny
    /// The user never touches the key: the request waits until cancelled
    /// (CTAP2_ERR_KEEPALIVE_CANCEL) or until the configured timeout (CTAP2_ERR_USER_ACTION_TIMEOUT).
    case never
}
