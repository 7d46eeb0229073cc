import Authenticators
import Synchronization

/// The application's conversation function (pam_conv(3)) as the module uses it: prompts and
/// messages to the person in front of sudo, login, a display manager or a screen locker.
public protocol PAMConversation: Sendable {
    /// The answer to `prompt` (typed hidden unless `echo`), or nil when the application gave none.
    func ask(_ prompt: String, echo: Bool) async -> String?
    /// Shows `text` (an error when `isError`).
    func tell(_ text: String, isError: Bool) async
}

/// The device layer's user during a PAM authentication: the PIN asked once through the
/// conversation. When the key refuses it, the device layer asks again; that second prompt is
/// declined and remembered, so the module answers `PAM_AUTH_ERR` instead of asking again behind
/// the stack's back (the application decides whether the user tries again).
final class PAMInteraction: AuthenticatorInteraction {
    private let conversation: any PAMConversation
    private struct State {
        var asked = false
        /// Set when the key refused the PIN: the attempts it said are left (nil when unknown).
        var refused: Int?? = nil
    }
    private let state = Mutex(State())

    init(conversation: any PAMConversation) { self.conversation = conversation }

    func pin(_ prompt: PINPrompt) async -> String? {
        // A PIN change the key demands cannot be done from a login prompt: decline.
        guard prompt.purpose == .verify else { return nil }
        let first = state.withLock { (state: inout State) -> Bool in
            if state.asked {
                state.refused = .some(prompt.attemptsLeft)
                return false
            }
            state.asked = true
            return true
        }
        guard first else { return nil }
        guard let pin = await conversation.ask("PIN for the security key: ", echo: false), !pin.isEmpty else {
            return nil
        }
        return pin
    }

    /// The attempts left after a PIN the key refused, if it refused one.
    var refusedPIN: Int?? { state.withLock { $0.refused } }
}
