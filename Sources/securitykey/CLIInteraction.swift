#if canImport(Glibc)
    import Glibc
#endif
import _SecurityKeyInternals
import Authenticators
import CTAP2
import FoundationEssentials
import SecurityKeys
import Synchronization
import Transport

/// The user on the command line, for the device layer (``AuthenticatorInteraction``) and for the
/// provider (``SecurityKeyInteraction``): PINs from the terminal (or standard input with
/// `--pin-stdin`), the account as `--user`/`--user-id` say or chosen on the terminal, prompts and
/// instructions on standard error. When a prompt gets no answer the operation ends as cancelled,
/// and ``unanswered`` says why.
final class CLIInteraction: AuthenticatorInteraction, SecurityKeyInteraction {
    let reader: PINReader
    let account: SecurityKeyAccountChoice
    private let touch = TouchPrompt()
    private let state = Mutex<(asked: Int, newPINAsked: Bool, unanswered: CLIError?)>((0, false, nil))

    init(reader: PINReader, account: SecurityKeyAccountChoice = .ask) {
        self.reader = reader
        self.account = account
    }

    /// Why the last prompt got no answer (no terminal, no more input after a wrong PIN, no
    /// account chosen).
    var unanswered: CLIError? { state.withLock { $0.unanswered } }

    /// With `--pin-stdin`, what a forced PIN change needs there.
    private static let forcedChangeLines = CLIError(
        .pinProblem, code: "pin-missing",
        "The security key demands a new PIN before use: with --pin-stdin, write the new PIN on the first line of standard input and the current PIN on the second."
    )

    /// Running out of input after a wrong PIN: the PIN was wrong (the key's last answer was
    /// CTAP2_ERR_PIN_INVALID).
    private static func wrongPIN(_ left: String) -> CLIError {
        CLIError(.pinProblem, code: "pin-invalid", "The PIN is wrong.\(left)", ctapStatus: .pinInvalid)
    }

    /// Counts a PIN prompt; returns how many there were.
    private func countPrompt() -> Int {
        state.withLock { state in
            state.asked += 1
            return state.asked
        }
    }

    /// Reads a PIN (a new one when `new`); when the user or the input gives none, keeps
    /// `reason(error)` as ``unanswered`` and answers nil.
    private func read(_ prompt: String, new: Bool, reason: (CLIError) -> CLIError) async -> String? {
        switch await reader.read(prompt, new: new) {
        case .success(let pin): return pin
        case .failure(let error) where PINReader.wasCancelled(error):
            // The operation ended first (its own error says why); no answer is not a wrong PIN.
            return nil
        case .failure(let error):
            let why = reason(error)
            state.withLock { $0.unanswered = why }
            return nil
        }
    }

    // MARK: The device layer's prompts

    func pin(_ prompt: PINPrompt) async -> String? {
        let asked = countPrompt()
        let left = prompt.attemptsLeft.map { " (\($0) attempt(s) left)" } ?? ""
        let text: String
        switch prompt.purpose {
        case .newPIN:
            text = "The security key demands a new PIN (at least \(prompt.minimumLength) characters). New PIN: "
        case .currentForChange:
            text = asked > 2 ? "Wrong PIN\(left). Current PIN: " : "Current PIN: "
        default:
            text = asked > 1 ? "Wrong PIN\(left). PIN for the security key: " : "PIN for the security key: "
        }
        let afterWrongPIN = prompt.purpose != .newPIN && prompt.attemptsLeft != nil && asked > 1
        return await read(text, new: prompt.purpose == .newPIN) { afterWrongPIN ? Self.wrongPIN(left) : $0 }
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

    // MARK: The provider's prompts

    func pin(deviceURI: String, attemptsLeft: Int?) async -> String? {
        let asked = countPrompt()
        let afterNewPIN = state.withLock { $0.newPINAsked }
        let left = attemptsLeft.map { " \($0) attempt(s) left." } ?? ""
        let prompt = asked == 1 ? "PIN for the security key: " : "Wrong PIN.\(left) PIN for the security key: "
        return await read(prompt, new: false) { error in
            asked > 1 ? Self.wrongPIN(left) : afterNewPIN && reader.fromStandardInput ? Self.forcedChangeLines : error
        }
    }

    func newPIN(deviceURI: String, minimumLength: Int) async -> String? {
        state.withLock { $0.newPINAsked = true }
        let prompt = "The security key demands a new PIN (at least \(minimumLength) characters). New PIN: "
        return await read(prompt, new: true) { reader.fromStandardInput ? Self.forcedChangeLines : $0 }
    }

    func chooseAccount(_ accounts: [SecurityKeyAccount]) async -> Int? {
        let names = accounts.map(\.label).joined(separator: "; ")
        if case .ask = account {
            if let index = await AccountPicker.ask(accounts) { return index }
            state.withLock {
                $0.unanswered = $0.unanswered
                    ?? CLIError.usage(
                        "The key holds \(accounts.count) accounts for this site (\(names)); choose one with --user NAME or --user-id ID.")
            }
            return nil
        }
        if let index = accounts.firstIndex(where: account.matches) { return index }
        // Keys name accounts only to a verified user (CTAP 2.1 §6.2.2): without names, say so.
        let unnamed = accounts.allSatisfy { $0.name == nil && $0.displayName == nil }
        let hint = unnamed ? " The key names accounts only after user verification: add --uv, or choose with --user-id." : ""
        state.withLock {
            $0.unanswered = CLIError(
                .failure, code: "no-credentials",
                "None of the key's \(accounts.count) accounts for this site is the one asked for; it holds: \(names).\(hint)")
        }
        return nil
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
