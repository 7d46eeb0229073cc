#if canImport(Glibc)
    import Glibc
#endif
import _SecurityKeyInternals
import Authenticators
import CTAP2
import FoundationEssentials
import Synchronization
import Transport

/// The device layer's user on the command line: PINs from the terminal (or standard input with
/// `--pin-stdin`), prompts and instructions on standard error.
final class CLIAuthenticatorInteraction: AuthenticatorInteraction {
    let reader: PINReader
    private let touch = TouchPrompt()
    private let state = Mutex<(asked: Int, unanswered: CLIError?)>((0, nil))

    init(reader: PINReader) { self.reader = reader }

    /// Why the last prompt got no answer (no terminal, no more input after a wrong PIN).
    var unanswered: CLIError? { state.withLock { $0.unanswered } }

    func pin(_ prompt: PINPrompt) async -> String? {
        let asked = state.withLock { state in
            state.asked += 1
            return state.asked
        }
        let left = prompt.attemptsLeft.map { " (\($0) attempt(s) left)" } ?? ""
        let text: String
        let isNew: Bool
        switch prompt.purpose {
        case .newPIN:
            text = "The security key demands a new PIN (at least \(prompt.minimumLength) characters). New PIN: "
            isNew = true
        case .currentForChange:
            text = asked > 2 ? "Wrong PIN\(left). Current PIN: " : "Current PIN: "
            isNew = false
        default:
            text = asked > 1 ? "Wrong PIN\(left). PIN for the security key: " : "PIN for the security key: "
            isNew = false
        }
        let result = await reader.read(text, new: isNew)
        switch result {
        case .success(let pin): return pin
        case .failure(let error) where PINReader.wasCancelled(error):
            // The operation ended first (its own error says why); no answer is not a wrong PIN.
            return nil
        case .failure(let error):
            // After a wrong PIN, running out of input means the PIN was wrong (the key's last
            // answer was CTAP2_ERR_PIN_INVALID).
            let reason =
                prompt.purpose != .newPIN && prompt.attemptsLeft != nil && asked > 1
                ? CLIError(.pinProblem, code: "pin-invalid", "The PIN is wrong.\(left)", ctapStatus: .pinInvalid) : error
            state.withLock { $0.unanswered = reason }
            return nil
        }
    }

    func activity(_ activity: AuthenticatorActivity) {
        switch activity {
        case .touchNeeded: touch.keepalive(.userPresenceNeeded)
        case .fallingBackToPIN: Console.err("Built-in user verification did not succeed; using the PIN.")
        case .userVerificationRetry(_, let left):
            Console.err("Not recognised\(left.map { "; \($0) attempt(s) left" } ?? ""). Try again.")
        default: break
        }
    }

    func instruct(_ instruction: AuthenticatorInstruction) {
        Console.err(instruction.message)
    }

    /// `error`, or the reason the user could not answer when the operation ended as cancelled
    /// because a prompt got no answer.
    func explain(_ error: any Error) -> any Error {
        if let failure = error as? AuthenticatorError, failure.code == .cancelled, let reason = unanswered {
            return reason
        }
        return error
    }

    /// Runs `body`; its failure is thrown as ``explain(_:)`` gives it.
    func explaining<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch { throw explain(error) }
    }
}

/// Asks the user to confirm a destructive operation on the terminal, or takes `--yes`.
enum Confirmation {
    /// Returns when the user confirmed; throws otherwise. Without a terminal and without
    /// `--yes` nothing is changed.
    static func ask(_ question: String, assumeYes: Bool) throws(CLIError) {
        if assumeYes { return }
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            throw CLIError.usage("\(question) There is no terminal to confirm on; pass --yes to confirm.")
        }
        defer { close(fd) }
        let line = TerminalPrompt.readLine(fd, prompt: "\(question) [y/N] ", limit: 16) ?? []
        let answer = String(decoding: line, as: UTF8.self).lowercased()
        guard answer == "y" || answer == "yes" else {
            throw CLIError(.cancelled, code: "declined", "Nothing was changed.")
        }
    }

    /// Asks `question` (given the key's identification) about `key`, then reads its getInfo
    /// again to check it is still the key the user confirmed.
    static func ask(
        about key: Authenticator, assumeYes: Bool, deadline: Deadline, _ question: (String) -> String
    ) async throws {
        let aaguid = await key.info.aaguid
        try ask(question(await key.identification), assumeYes: assumeYes)
        try await key.reidentify(as: aaguid, deadline: deadline)
    }
}
