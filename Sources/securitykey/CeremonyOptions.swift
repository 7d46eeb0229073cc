import _SecurityKeyInternals
import FoundationEssentials
import ArgumentParser
import CTAP2
import SecurityKeys

/// Options register and authenticate share: the relying party and the client data.
struct CeremonyOptions: ParsableArguments {
    @Option(
        name: .customLong("rp"),
        help: ArgumentHelp("The relying party ID (a domain, e.g. example.org).", valueName: "id"))
    var rpOption: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The relying party's WebAuthn JSON options, as its server sent them (file, or - for standard input).",
            valueName: "file"))
    var options: String?

    /// The relying party ID given with `--rp` (with `--options` the options name it).
    var rp: String { rpOption ?? "" }

    @Option(
        name: .long, help: ArgumentHelp("The challenge, base64url (random when absent).", valueName: "b64url")
    )
    var challenge: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The origin of the client data (default https://RP).", valueName: "url"))
    var origin: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Sign this client data hash (32 bytes, base64 or base64url) instead of building client data.",
            valueName: "b64"))
    var clientDataHash: String?

    @Flag(name: .long, help: "Require user verification (PIN or built-in).")
    var uv = false

    @Flag(
        name: .customLong("no-uv"),
        help: "Do not verify the user even where the key could (WebAuthn 'discouraged'); the default is 'preferred'.")
    var noUV = false

    @Flag(name: .long, help: "Read the PIN from standard input instead of the terminal.")
    var pinStdin = false

    func validate() throws {
        if uv, noUV { throw ValidationError("--uv and --no-uv exclude each other.") }
        if clientDataHash != nil, challenge != nil || origin != nil {
            throw ValidationError("--client-data-hash excludes --challenge and --origin.")
        }
        if options != nil {
            guard rpOption == nil, challenge == nil, clientDataHash == nil else {
                throw ValidationError(
                    "--options excludes --rp, --challenge and --client-data-hash: the options name them.")
            }
            if options == "-", pinStdin {
                throw ValidationError("--options - and --pin-stdin cannot both read standard input.")
            }
        } else if rpOption == nil {
            throw ValidationError("Missing expected argument '--rp <id>' (or --options).")
        }
        try validateRelyingPartyOption(rpOption)
    }

    /// The options document named by `--options`, read within the parser's size limit.
    func optionsDocument() throws -> [UInt8]? {
        guard let options else { return nil }
        let bytes = try readInput(options)
        let limit = JSONLimits.webAuthnOptions.maximumBytes
        guard bytes.count <= limit else {
            throw CLIError.invalidInput(
                "\(options) is larger than the \(limit) bytes WebAuthn options may take.")
        }
        return bytes
    }

    /// The origin for options-driven ceremonies: `--origin`, or https:// + the options' RP ID.
    func optionsOrigin(relyingPartyIdentifier: String?) throws -> String {
        if let origin { return origin }
        guard let relyingPartyIdentifier else {
            throw CLIError.usage("The options name no RP ID: give the caller's origin with --origin.")
        }
        return "https://\(relyingPartyIdentifier)"
    }

    /// The shared options as the provider makes requests of them (the client data from the
    /// origin and challenge, or the hash given), with `timeout`.
    func requestOptions(timeout: Duration) -> SecurityKeyRequestOptions {
        SecurityKeyRequestOptions(
            relyingPartyIdentifier: rp, origin: origin, challenge: challenge, clientDataHash: clientDataHash,
            userVerification: userVerification, timeout: timeout)
    }

    /// The provider's user verification preference: required with `--uv`, discouraged with
    /// `--no-uv` (then only when the key insists), else preferred as browsers default to (a key
    /// with a PIN or built-in UV verifies the user).
    var userVerification: UserVerificationPreference { uv ? .required : noUV ? .discouraged : .preferred }

    /// Reads PINs as `--pin-stdin` says.
    var pinReader: PINReader { PINReader(fromStandardInput: pinStdin) }
}

/// `--user` and `--user-id` of the sign-in commands: the account to sign in with when the key
/// holds several for the relying party.
struct AccountOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Sign in as this account (its name or display name) when the key holds several for the RP.",
            valueName: "name"))
    var user: String?

    // Unconditional: a base64url handle may start with "-".
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Sign in as the account with this user handle (base64url).", valueName: "b64url"))
    var userID: String?

    func validate() throws {
        if user != nil, userID != nil { throw ValidationError("--user and --user-id exclude each other.") }
        if let userID, Base64URL.decode(userID)?.isEmpty ?? true {
            throw ValidationError("--user-id takes a base64url user handle, not \"\(userID)\".")
        }
    }

    /// The choice the options make (ask when neither is given).
    var choice: SecurityKeyAccountChoice {
        if let user { return .name(user) }
        if let userID, let id = Base64URL.decode(userID) { return .userID(id) }
        return .ask
    }
}

/// Refuses a URL given to `--rp`, naming the domain to give instead.
func validateRelyingPartyOption(_ rp: String?) throws {
    guard let rp, rp.contains("://") else { return }
    let host = URLComponents(string: rp)?.host.map { ": --rp \($0)" } ?? ""
    throw ValidationError("--rp takes a domain, not a URL\(host).")
}

/// Runs `body`, in which the provider makes a request of the options; options it cannot use
/// are a usage error.
func usage<T>(_ body: () throws(SecurityKeyError) -> T) throws(CLIError) -> T {
    do throws(SecurityKeyError) { return try body() } catch { throw CLIError.usage(error.message) }
}
