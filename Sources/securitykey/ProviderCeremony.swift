import _SecurityKeyInternals
import Authenticators
import CBOR
import CTAP2
import Crypto
import FoundationEssentials
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
        _ result: (SecurityKeyAuthorization) -> Outcome?
    ) async throws -> Outcome {
        let deadline = Deadline.after(request.timeout)
        let logger = global.makeLogger()
        let sources: [SecurityKeySource]
        var opened: Authenticator?
        if let uri = global.device {
            // Opened once: the controller uses this handle and its getInfo as they are.
            let key = try await global.directory(logger: logger).open(uri: uri, deadline: deadline)
            opened = key
            sources = [.authenticator(key)]
        } else {
            sources = try global.directory(logger: logger).discoveries.map(SecurityKeySource.discovery)
        }
        let interaction = CLIInteraction(reader: pinReader)
        let controller = SecurityKeyAuthorizationController(
            sources: sources, interaction: interaction, logger: logger)
        let printer = StatusPrinter()
        let outcome: Swift.Result<SecurityKeyAuthorization, SecurityKeyError>
        do throws(SecurityKeyError) {
            outcome = .success(
                try await controller.perform(request, deadline: deadline, onStatus: { printer.show($0) }))
        } catch {
            outcome = .failure(error)
        }
        await opened?.close()
        switch outcome {
        case .success(let authorization):
            guard let wanted = result(authorization) else { throw mismatched }
            return wanted
        case .failure(let error):
            // A PIN prompt that could not be answered explains the cancellation better.
            if error.code == .cancelled, let reason = interaction.unanswered { throw reason }
            throw error
        }
    }

    /// The provider answered a request with the other kind of result (it never does).
    static let mismatched = CLIError(
        .failure, code: "invalid-response", "The provider answered with the wrong kind of result.")

    /// The client data hash that was signed: of the clientDataJSON, or the one given.
    static func clientDataHash(json: [UInt8]?, input: SecurityKeyClientData) -> [UInt8] {
        if let json { return Array(SHA256.hash(data: json)) }
        if case .hash(let hash) = input { return hash }
        return []
    }
}

/// Prints what a request waits for on standard error: the touch prompt once, and the choice
/// among several keys.
final class StatusPrinter: Sendable {
    private let prompt = TouchPrompt()
    private let choosing = Atomic<Bool>(false)

    func show(_ status: SecurityKeyStatus) {
        switch status {
        case .touchNeeded: prompt.keepalive(.userPresenceNeeded)
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

/// Answers the provider's PIN prompts on the terminal (or from standard input with
/// `--pin-stdin`), and its account choice by taking the first account.
final class CLIInteraction: SecurityKeyInteraction {
    let reader: PINReader
    private let state = Mutex<(asked: Int, unanswered: CLIError?)>((0, nil))

    init(reader: PINReader) { self.reader = reader }

    /// Why the last PIN prompt got no answer (no terminal, no more input after a wrong PIN).
    var unanswered: CLIError? { state.withLock { $0.unanswered } }

    func pin(deviceURI: String, attemptsLeft: Int?) async -> String? {
        let asked = state.withLock { state in
            state.asked += 1
            return state.asked
        }
        let left = attemptsLeft.map { " \($0) attempt(s) left." } ?? ""
        let prompt = asked == 1 ? "PIN for the security key: " : "Wrong PIN.\(left) PIN for the security key: "
        let result = await reader.read(prompt, new: false)
        switch result {
        case .success(let pin): return pin
        case .failure(let error) where PINReader.wasCancelled(error):
            // The ceremony ended first (its own error says why); no answer is not a wrong PIN.
            return nil
        case .failure(let error):
            let reason =
                asked > 1
                ? CLIError(.pinProblem, code: "pin-invalid", "The PIN is wrong.\(left)", ctapStatus: .pinInvalid)
                : error
            state.withLock { $0.unanswered = reason }
            return nil
        }
    }

    func newPIN(deviceURI: String, minimumLength: Int) async -> String? {
        let prompt = "The security key demands a new PIN (at least \(minimumLength) characters). New PIN: "
        let result = await reader.read(prompt, new: true)
        switch result {
        case .success(let pin): return pin
        case .failure(let error) where PINReader.wasCancelled(error): return nil
        case .failure(let error):
            state.withLock { $0.unanswered = error }
            return nil
        }
    }

    func chooseAccount(_ accounts: [SecurityKeyAccount]) async -> Int? {
        let first = accounts.first.flatMap { $0.name ?? $0.displayName } ?? "the first account"
        Console.err("The key holds \(accounts.count) accounts for this site; signing in as \(first).")
        return accounts.isEmpty ? nil : 0
    }
}
