import ArgumentParser

/// The `securitykey` command line tool.
@main
struct SecurityKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "securitykey",
        abstract: "Register, sign in with, inspect and emulate FIDO2 security keys.",
        subcommands: [])
}
