import ArgumentParser
import SecurityKeys

/// The `securitykey` command line tool.
@main
struct SecurityKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "securitykey",
        abstract: "Register, sign in with, inspect and emulate FIDO2 security keys.",
        discussion: """
            Keys are named by URI with --device: hid:/dev/hidrawN, pcsc:READER NAME (or pcsc:INDEX), \
            udp:HOST:PORT. Without --device, register and authenticate use the key the user touches \
            (waiting for one when none is present); the other commands use the only key present. \
            CTAPHID-over-UDP keys are listed only when named with --udp HOST:PORT or \
            SECURITYKEY_UDP=HOST:PORT,... . --json prints stable, \
            documented JSON (Docs/CLI.md). PINs are asked on the terminal without echo, or read from \
            standard input with --pin-stdin. SECURITYKEY_TRACE=1 logs the wire traffic on standard \
            error; PINs and tokens never appear in it.

            \(CLIExitStatus.helpText)
            """,
        version: SecurityKeyPackage.version,
        subcommands: [
            ListCommand.self, InfoCommand.self, RegisterCommand.self, AuthenticateCommand.self,
            VerifyCommand.self, PINCommand.self, CredentialsCommand.self, LargeBlobCommand.self, BioCommand.self,
            ConfigCommand.self, ResetCommand.self, WinkCommand.self, HMACSecretCommand.self, DecodeCommand.self,
            VirtualCommand.self, MDSCommand.self, FleetCommand.self, TokenCommand.self, PAMCommand.self,
        ])

    /// Runs the command line; a usage error found while parsing (a missing or malformed option,
    /// which no subcommand saw) is also reported as a JSON error object under `--json`, as every
    /// failure of a running subcommand is, with the code `usage` and exit status 64.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            // A subcommand's own failures (ExitCode) were already reported by ReportingCommand.
            if !(error is ExitCode), exitCode(for: error) == .validationFailure,
                CommandLine.arguments.dropFirst().contains("--json")
            {
                Console.json(.object([("error", CLIError.usage(message(for: error)).json)]))
            }
            exit(withError: error)
        }
    }
}
