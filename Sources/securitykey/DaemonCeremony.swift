import _SecurityKeyInternals
import ArgumentParser
import SecurityKeyDaemonClient
import SecurityKeys

/// `--via-daemon` and `--bus-address`: route a registration or sign-in through a running
/// securitykeyd instead of opening the keys here.
struct DaemonRouteOptions: ParsableArguments {
    @Flag(
        name: .long,
        help:
            "Send the ceremony to a running securitykeyd (session bus, or --bus-address) instead of opening the keys."
    )
    var viaDaemon = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The D-Bus address of the bus securitykeyd is on (with --via-daemon).", valueName: "address"))
    var busAddress: String?

    func validate() throws {
        if busAddress != nil, !viaDaemon { throw ValidationError("--bus-address needs --via-daemon.") }
    }

    /// The daemon chooses among its keys (by touch): a `--device` cannot be honoured.
    func check(device: String?) throws {
        if viaDaemon, device != nil {
            throw CLIError.usage(
                "--via-daemon excludes --device: the daemon uses the key touched among its own.")
        }
    }
}

/// A ceremony performed by securitykeyd (``SecurityKeyDaemonClient``) as the CLI runs it:
/// prompts on standard error, the PIN asked through the CLI's PIN source, the account chosen
/// as without the daemon, and the client's errors in the CLI's exit statuses.
enum DaemonCeremony {
    /// Registers through the daemon.
    static func register(
        _ request: SecurityKeyCredentialRegistrationRequest, route: DaemonRouteOptions, pinReader: PINReader
    ) async throws -> SecurityKeyCredentialRegistration {
        let interaction = CLIInteraction(reader: pinReader)
        do { return try await client(route, interaction).register(request) } catch {
            throw cliError(error, interaction: interaction)
        }
    }

    /// Signs in through the daemon.
    static func authenticate(
        _ request: SecurityKeyCredentialAssertionRequest, route: DaemonRouteOptions, pinReader: PINReader,
        account: SecurityKeyAccountChoice = .ask
    ) async throws -> SecurityKeyCredentialAssertion {
        let interaction = CLIInteraction(reader: pinReader, account: account)
        do { return try await client(route, interaction).authenticate(request) } catch {
            throw cliError(error, interaction: interaction)
        }
    }

    static func client(_ route: DaemonRouteOptions, _ interaction: CLIInteraction) -> SecurityKeyDaemonClient {
        let prompt = TouchPrompt()
        return SecurityKeyDaemonClient(busAddress: route.busAddress, interaction: interaction) { status in
            switch status {
            case .waitingForKey: Console.err("Insert or tap a security key.")
            case .selectingKey(let count): Console.err("\(count) security keys found: touch the one to use.")
            case .touchNeeded: prompt.keepalive(.userPresenceNeeded)
            default: break
            }
        }
    }

    /// The client's error as the CLI's exit statuses say it; a PIN prompt left unanswered says
    /// why the daemon then refused.
    static func cliError(_ error: SecurityKeyDaemonClientError, interaction: CLIInteraction) -> CLIError {
        if error.daemonErrorName != nil, let reason = interaction.unanswered { return reason }
        if error.code == .notExpressible {
            let sentence =
                switch error.reason {
                case .clientDataHash:
                    "--via-daemon needs an origin (the daemon builds the client data), not --client-data-hash."
                case .hmacSecretSalts:
                    "--via-daemon cannot pass raw hmac-secret salts (WebAuthn JSON has no such input); use --prf-salt."
                case .rawExtensionInputs, nil:
                    "--via-daemon cannot pass extension inputs that have no WebAuthn JSON form; leave them out."
                }
            return CLIError.usage(sentence)
        }
        return CLIError(CLIExitStatus(error.category), code: error.code.rawValue, error.message)
    }
}
