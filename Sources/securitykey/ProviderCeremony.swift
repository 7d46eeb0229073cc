import _SecurityKeyInternals
import Authenticators
import CBOR
import CTAP2
import Crypto
import FoundationEssentials
import Glibc
import SecurityKeys
import Synchronization
import Transport

/// Registration and sign-in for the CLI through the SecurityKeys provider API, the same
/// `SecurityKeyAuthorizationController` applications use, on the key `--device` names or the
/// one the user touches.
enum ProviderCeremony {
    /// Performs `request` on the key `--device` names or, without it, on the key the user
    /// touches among those present (every configured transport, as a browser does), printing
    /// the prompts on standard error and asking for the PIN on the terminal (or standard
    /// input) when the key needs it.
    ///
    /// One deadline covers it all, made here from the request's timeout (`--timeout`, or the
    /// relying party's): opening the key, its one getInfo, and the ceremony on it.
    static func perform<Outcome>(
        _ request: SecurityKeyAuthorizationRequest, global: GlobalOptions, pinReader: PINReader,
        account: SecurityKeyAccountChoice = .ask, _ result: (SecurityKeyAuthorization) -> Outcome?
    ) async throws -> Outcome {
        let deadline = Deadline.after(request.timeout)
        let logger = global.makeLogger()
        let interaction = CLIInteraction(reader: pinReader, account: account)
        let printer = StatusPrinter()
        let outcome = try await SecurityKeySource.withSources(
            in: global.directory(logger: logger), deviceURI: global.device, deadline: deadline
        ) { sources -> Swift.Result<SecurityKeyAuthorization, SecurityKeyError> in
            let controller = SecurityKeyAuthorizationController(
                sources: sources, interaction: interaction, logger: logger)
            do throws(SecurityKeyError) {
                return .success(
                    try await controller.perform(request, deadline: deadline, onStatus: { printer.show($0) }))
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let authorization):
            guard let wanted = result(authorization) else { throw mismatched }
            return wanted
        case .failure(let error):
            // A PIN prompt or account choice that could not be answered explains the
            // cancellation better; a touch that never came is said as such.
            if error.code == .cancelled, let reason = interaction.unanswered { throw reason }
            if let noTouch = printer.noTouch(error, timeout: request.timeout) { throw noTouch }
            throw error
        }
    }

    /// The provider answered a request with the other kind of result (it never does).
    static let mismatched = CLIError(
        .failure, code: "invalid-response", "The provider answered with the wrong kind of result.")
}

/// Prints what a request waits for on standard error: the touch prompt once, and the choice
/// among several keys.
final class StatusPrinter: Sendable {
    private let prompt = TouchPrompt()
    private let choosing = Atomic<Bool>(false)
    private let touchAsked = Atomic<Bool>(false)

    /// A timeout while the key waited for a touch, said as such (not as the transport's or the
    /// key's timeout): "No touch within N s".
    func noTouch(_ error: SecurityKeyError, timeout: Duration) -> CLIError? {
        guard touchAsked.load(ordering: .relaxed), error.isTimeout else { return nil }
        let mapped = CLIError(error)
        let tenths = timeout.components.seconds * 10 + timeout.components.attoseconds / 100_000_000_000_000_000
        let shown = tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)"
        return CLIError(
            .cancelled, code: mapped.code,
            "No touch within \(shown) s: the key waited for its button; touch it sooner or give a longer --timeout.",
            ctapStatus: mapped.ctapStatus)
    }

    func show(_ status: SecurityKeyStatus) {
        switch status {
        case .touchNeeded:
            touchAsked.store(true, ordering: .relaxed)
            prompt.keepalive(.userPresenceNeeded)
        case .waitingForKey: Console.err("Insert or tap a security key.")
        case .selectingKey(let count):
            if !choosing.exchange(true, ordering: .relaxed) {
                Console.err("\(count) security keys found: touch the one to use.")
            }
        case .keySelected(let uri):
            if choosing.load(ordering: .relaxed) { Console.err("Using the security key at \(uri).") }
        default: break
        }
    }
}

/// The account choice on the terminal: a numbered list of the accounts and a prompt, on the
/// controlling terminal when standard error is one.
enum AccountPicker {
    /// The index chosen; nil without a terminal, on an answer that is not a listed number, or
    /// when the calling task is cancelled.
    static func ask(_ accounts: [SecurityKeyAccount]) async -> Int? {
        guard isatty(STDERR_FILENO) == 1 else { return nil }
        let stop = PromptCancellation()
        var text = "The key holds \(accounts.count) accounts for this site:\n"
        for (index, account) in accounts.enumerated() { text += "  \(index + 1)) \(account.label)\n" }
        text += "Sign in as (1-\(accounts.count)): "
        let prompt = text
        let answer = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
                let started = OSThread.detach(name: "account-picker") {
                    let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
                    guard fd >= 0 else { return continuation.resume(returning: nil) }
                    defer { close(fd) }
                    let line = TerminalPrompt.readLine(fd, prompt: prompt, limit: 16, stop: stop)
                    continuation.resume(returning: line.map { String(decoding: $0, as: UTF8.self) })
                }
                if !started { continuation.resume(returning: nil) }
            }
        } onCancel: {
            stop.cancel()
        }
        guard let answer, let number = Int(answer.trimmingWhitespace()),
            (1...accounts.count).contains(number)
        else { return nil }
        return number - 1
    }
}
