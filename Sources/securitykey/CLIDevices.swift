import Authenticators
import CTAP2
import FoundationEssentials
import HIDTransport
import Logging
import Transport

extension GlobalOptions {
    /// The UDP endpoints to list: `--udp` options, then `SECURITYKEY_UDP`, then a `udp:` key
    /// named by `device`.
    func udpEndpoints(device: String? = nil) throws(CLIError) -> [UDPEndpoint] {
        do {
            return try AuthenticatorDirectory.udpEndpoints(
                options: udp, environment: ProcessInfo.processInfo.environment, device: device)
        } catch {
            throw CLIError.usage(error.message)
        }
    }

    /// The directory of every key this invocation may use: USB HID, PC/SC and the configured
    /// UDP endpoints (with a UDP key named by `--device`, watched like a configured one).
    func directory(logger: Logger) throws(CLIError) -> AuthenticatorDirectory {
        AuthenticatorDirectory.system(udpEndpoints: try udpEndpoints(device: device), logger: logger)
    }

    /// The command's deadline, from `--timeout`.
    func deadline() -> Deadline { .after(timeoutDuration) }
}

/// Opens the key `--device` names, or the only key present, runs `body` with it, and closes it.
/// With several keys present and no `--device`, refuses and lists them: administration commands
/// never pick a key on the user's behalf. A command that asks the user through `interaction`
/// has its failure explained by it (``CLIInteraction/explain(_:)``: a prompt that got no answer
/// says why the operation ended).
func withAuthenticator<T: Sendable>(
    _ global: GlobalOptions, explaining interaction: CLIInteraction? = nil,
    _ body: (Authenticator, Deadline) async throws -> T
) async throws -> T {
    try await withAuthenticator(global, explaining: interaction) { key, deadline, _ in try await body(key, deadline) }
}

/// ``withAuthenticator(_:explaining:_:)`` that also hands `body` the directory the key came from
/// (reset watches it for the key's re-insertion).
func withAuthenticator<T: Sendable>(
    _ global: GlobalOptions, explaining interaction: CLIInteraction? = nil,
    _ body: (Authenticator, Deadline, AuthenticatorDirectory) async throws -> T
) async throws -> T {
    let logger = global.makeLogger()
    let directory = try global.directory(logger: logger)
    let deadline = global.deadline()
    let authenticator: Authenticator
    if let uri = global.device {
        authenticator = try await directory.open(uri: uri, deadline: deadline)
    } else {
        let only: AuthenticatorDirectory.OnlyKey
        do throws(AuthenticatorError) { only = try await directory.openOnly(deadline: deadline) } catch {
            guard error.code == .noDevice else { throw error }
            throw CLIError(
                .noDevice, code: "no-device",
                "No security key found; plug one in, or name one with --device (see `securitykey list`).")
        }
        switch only {
        case .one(let key): authenticator = key
        case .several(let uris):
            throw CLIError.usage(
                "\(uris.count) security keys are present; choose one with --device: \(uris.joined(separator: ", ")).")
        }
    }
    do {
        let result = try await body(authenticator, deadline, directory)
        await authenticator.close()
        return result
    } catch {
        await authenticator.close()
        throw interaction?.explain(error) ?? error
    }
}
