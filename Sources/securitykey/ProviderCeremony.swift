import Authenticators
import CBOR
import CTAP2
import Crypto
import Foundation
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
    static func perform<Result: Sendable>(
        global: GlobalOptions, pinReader: PINReader,
        _ request: @escaping @Sendable (SecurityKeyAuthorizationController) async throws(SecurityKeyError) -> Result
    ) async throws -> Result {
        let logger = global.makeLogger()
        let sources: [SecurityKeySource]
        var connection: (any AuthenticatorConnection)?
        if let uri = global.device {
            let directory = try global.directory(logger: logger)
            let key = try await directory.open(uri: uri, deadline: global.deadline())
            connection = key.session.connection
            sources = [.connection(key.session.connection)]
        } else {
            sources = try global.directory(logger: logger).discoveries.map(SecurityKeySource.discovery)
        }
        let interaction = CLIInteraction(reader: pinReader)
        let controller = SecurityKeyAuthorizationController(
            sources: sources, interaction: interaction, logger: logger)
        let outcome: Swift.Result<Result, SecurityKeyError> = await withTaskGroup(
            of: Void.self
        ) { group in
            let prompt = TouchPrompt()
            group.addTask {
                var choosing = false
                for await status in controller.statusUpdates {
                    switch status {
                    case .touchNeeded: prompt.keepalive(.userPresenceNeeded)
                    case .waitingForKey: Console.err("Insert or tap a security key.")
                    case .selectingKey(let count):
                        if !choosing { Console.err("\(count) security keys found: touch the one to use.") }
                        choosing = true
                    case .keySelected(let uri):
                        if choosing { Console.err("Using the security key at \(uri).") }
                    default: break
                    }
                }
            }
            defer { group.cancelAll() }
            do throws(SecurityKeyError) {
                return .success(try await request(controller))
            } catch {
                return .failure(error)
            }
        }
        await connection?.close()
        switch outcome {
        case .success(let authorization): return authorization
        case .failure(let error):
            // A PIN prompt that could not be answered explains the cancellation better.
            if error.code == .canceled, let reason = interaction.unanswered { throw reason }
            throw error
        }
    }

    /// A WebAuthn L3 PublicKeyCredential JSON (RegistrationResponseJSON or
    /// AuthenticationResponseJSON): id, rawId, type, attachment, `response` (clientDataJSON first,
    /// then `response`'s members), the client extension results, then `beside` (rpId, ...).
    static func credentialJSON(
        id: [UInt8], clientDataJSON: [UInt8]?, response: [(String, JSONValue?)], beside: [(String, JSONValue?)],
        clientExtensionResults: JSONValue = .object([])
    ) -> JSONValue {
        let text = Base64URL.encode(id)
        return .members(
            [
                ("id", .string(text)), ("rawId", .string(text)), ("type", "public-key"),
                ("authenticatorAttachment", "cross-platform"),
                ("response", .members([("clientDataJSON", clientDataJSON.map { .string(Base64URL.encode($0)) })] + response)),
                ("clientExtensionResults", clientExtensionResults),
            ] + beside)
    }

    /// The client data hash that was signed: of the clientDataJSON, or the one given.
    static func clientDataHash(json: [UInt8]?, input: WebAuthnClientData) -> [UInt8] {
        json.map { Array(SHA256.hash(data: $0)) } ?? input.givenHash
    }

    /// The client data for `ceremony`: built from the origin and challenge, or the hash given.
    static func clientData(_ input: WebAuthnClientData) -> SecurityKeyClientData {
        switch input {
        case .origin(let origin, _): .origin(origin)
        case .hash(let hash): .hash(hash)
        }
    }
}

/// What `--client-data-hash`, `--origin` and `--challenge` say the client data is.
enum WebAuthnClientData: Sendable {
    /// Build clientDataJSON for this origin and challenge.
    case origin(String, challenge: [UInt8])
    /// Sign this client data hash; there is no clientDataJSON.
    case hash([UInt8])

    /// The hash given with `--client-data-hash` (empty when the provider builds the client data).
    var givenHash: [UInt8] {
        if case .hash(let hash) = self { return hash }
        return []
    }

    /// The challenge to put in the request (the hash mode has none of its own).
    var challenge: [UInt8] {
        if case .origin(_, let challenge) = self { return challenge }
        return []
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
