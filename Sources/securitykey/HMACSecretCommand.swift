import _SecurityKeyInternals
import ArgumentParser
import CBOR
import CTAP2
import FoundationEssentials
import SecurityKeys

/// `securitykey hmac-secret`: prints a credential's hmac-secret for given salts, for scripts
/// (what `fido2-assert -G -h` is used for: disk unlocking, key derivation).
struct HMACSecretCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "hmac-secret",
        abstract: "Print a credential's hmac-secret for one or two salts (one line, for scripts).",
        discussion: """
            Signs in with --credential (or a discoverable credential of --rp: --user or --user-id \
            chooses among several, as for authenticate) asking the hmac-secret \
            extension for the secret of --salt (32 bytes: 64 hex digits, base64 or base64url), and \
            prints only the secret on standard output: hex by default, base64 with --base64. With \
            --salt2 the two 32-byte secrets are printed one after the other on the same line. The salts \
            are used as given (no WebAuthn PRF hashing). The secret differs with and without --uv. \
            With --json prints {"output1": ..., "output2": ...} in the chosen encoding.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("The relying party ID.", valueName: "id"))
    var rp: String

    @Option(
        name: .long, parsing: .unconditionalSingleValue,
        help: ArgumentHelp("The credential ID (base64url); repeatable; none: a discoverable credential.", valueName: "id"))
    var credential: [String] = []

    @Option(name: .long, help: ArgumentHelp("The 32-byte salt (hex, base64 or base64url).", valueName: "salt"))
    var salt: String

    @Option(name: .long, help: ArgumentHelp("A second 32-byte salt.", valueName: "salt"))
    var salt2: String?

    @Flag(name: .long, help: "Verify the user (PIN or built-in UV): the secret is a different one.")
    var uv = false

    @Flag(name: .long, help: "Print base64 instead of hex.")
    var base64 = false

    @Flag(name: .long, help: "Read the PIN from standard input instead of the terminal.")
    var pinStdin = false

    @OptionGroup(title: "Account") var account: AccountOptions

    var wantsJSON: Bool { global.json }

    func validate() throws { try validateRelyingPartyOption(rp) }

    func execute() async throws {
        // Without --uv, no verification even where the key could: the secret must not change
        // with whether a PIN happens to be set.
        let options = SecurityKeyRequestOptions(
            relyingPartyIdentifier: rp, userVerification: uv ? .required : .discouraged, timeout: global.timeoutDuration)
        var request = try usage { () throws(SecurityKeyError) in try options.assertionRequest(allowing: credential) }
        request.hmacGetSecret = SecurityKeyHMACSecretInput(
            salt1: try parseSalt(salt, option: "--salt"), salt2: try salt2.map { try parseSalt($0, option: "--salt2") })
        let assertion: SecurityKeyCredentialAssertion
        do {
            assertion = try await ProviderCeremony.perform(
                .assertion(request), global: global, pinReader: PINReader(fromStandardInput: pinStdin),
                account: account.choice, \.assertion)
        } catch {
            throw AuthenticateCommand.explainMissingCredential(error, request: request)
        }
        try account.choice.check(assertion)
        guard let secret = assertion.hmacGetSecret else {
            throw CLIError(
                .notSupported, code: "unsupported-extension",
                "The security key returned no hmac-secret: it lacks the extension or the credential was made without --hmac-secret.")
        }
        // Standard base64 with padding is what `fido2-assert` prints.
        func encode(_ bytes: [UInt8]) -> String { base64 ? Base64.encode(bytes) : Hex.encode(bytes) }
        var first = secret.output1.withUnsafeBytes { Array($0) }
        var second = secret.output2?.withUnsafeBytes { Array($0) }
        defer {
            first.wipe()
            second?.wipe()
        }
        if global.json {
            Console.json(.members([("output1", .string(encode(first))), ("output2", second.map { .string(encode($0)) })]))
            return
        }
        Console.out(encode(first + (second ?? [])))
    }
}
