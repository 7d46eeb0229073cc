import Authenticators
import Synchronization

/// The PIN OpenSSH passed to a call, handed to the device layer once. When the key refuses it,
/// the device layer asks again (with the attempts left); that second prompt is declined and
/// remembered, so the call ends with the attempts left instead of spending another attempt the
/// user did not make. OpenSSH decides whether to ask the user again.
final class OneAttemptPIN: AuthenticatorInteraction {
    private let pin: String?
    private struct State {
        var given = false
        /// Set when the key refused the PIN: the attempts it said are left (nil when unknown).
        var refused: Int?? = nil
    }
    private let state = Mutex(State())

    init(_ pin: String?) { self.pin = pin }

    /// Whether OpenSSH passed a PIN.
    var isGiven: Bool { pin != nil }

    var canPrompt: Bool { pin != nil }

    func pin(_ prompt: PINPrompt) async -> String? {
        // A PIN change the key demands cannot be done through OpenSSH: decline.
        guard prompt.purpose == .verify, let pin else { return nil }
        return state.withLock { (state: inout State) -> String? in
            if state.given {
                state.refused = .some(prompt.attemptsLeft)
                return nil
            }
            state.given = true
            return pin
        }
    }

    /// `error`, or, when it came from declining a second attempt, the wrong PIN it stands for.
    func explain(_ error: SSHSecurityKeyError) -> SSHSecurityKeyError {
        guard let refused = state.withLock({ $0.refused }) else { return error }
        let left = refused.map { $0 == 1 ? "1 attempt left" : "\($0) attempts left" } ?? "attempts left unknown"
        return SSHSecurityKeyError(
            .pinRequired, "Wrong PIN for the security key (\(left)).", underlying: error.underlying)
    }
}
