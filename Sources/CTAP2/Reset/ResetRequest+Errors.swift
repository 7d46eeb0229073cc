extension ResetRequest {
    /// What a failed reset means to the user (CTAP 2.1 §6.6): the statuses a reset answers with
    /// get a sentence of their own; other errors come back unchanged.
    ///
    /// - NOT_ALLOWED: keys accept reset only within about 10 seconds of power-up (the spec lets
    ///   them choose; YubiKeys and most others take 10 s), so that malware cannot wipe a key
    ///   that merely sits in a port.
    /// - OPERATION_DENIED: the user declined on the key, or did not hold the touch long enough
    ///   on a key with longTouchForReset.
    /// - USER_ACTION_TIMEOUT: nobody touched the key in time.
    public static func explain(_ error: CTAP2Error) -> CTAP2Error {
        var explained = error
        switch error.code {
        case .notAllowed:
            explained.message =
                "The key accepts a reset only within about 10 seconds of being plugged in: remove it, insert it again and reset at once."
        case .operationDenied:
            explained.message =
                "The reset was declined on the key (or the touch was not held long enough); nothing was erased."
        case .userActionTimeout:
            explained.message = "The key was not touched in time to confirm the reset; nothing was erased."
        default:
            break
        }
        return explained
    }
}
