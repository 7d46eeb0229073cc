import Authenticators
import Synchronization

/// Answers PIN prompts from a script and records every prompt and activity.
final class RecordingInteraction: AuthenticatorInteraction {
    private let answers: Mutex<[String]>
    let prompts = Mutex<[PINPrompt]>([])
    let activities = Mutex<[AuthenticatorActivity]>([])
    let instructions = Mutex<[AuthenticatorInstruction]>([])
    let canPrompt: Bool

    init(pins: [String] = [], canPrompt: Bool = true) {
        answers = Mutex(pins)
        self.canPrompt = canPrompt
    }

    func pin(_ prompt: PINPrompt) async -> String? {
        prompts.withLock { $0.append(prompt) }
        return answers.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }

    func activity(_ activity: AuthenticatorActivity) {
        activities.withLock { $0.append(activity) }
    }

    func instruct(_ instruction: AuthenticatorInstruction) {
        instructions.withLock { $0.append(instruction) }
    }

    /// The kinds of instruction given, in order.
    var instructionKinds: [AuthenticatorInstruction.Kind] { instructions.withLock { $0.map(\.kind) } }

    /// The URIs of keys that left a choice, with the code they left with.
    var departures: [(String, AuthenticatorError.Code)] {
        activities.withLock { list in
            list.compactMap {
                if case .deviceLeft(let uri, let error) = $0 { return (uri, error.code) }
                return nil
            }
        }
    }
}
