import _SecurityKeyInternals
import ArgumentParser
import CBOR
import CTAP2
import SecurityKeys

/// `securitykey authenticate`: gets an assertion (WebAuthn authentication).
struct AuthenticateCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "authenticate",
        abstract: "Sign in with a credential on the key (getAssertion).",
        discussion: """
            Without --credential the key is asked for its discoverable credentials for the RP. Prints \
            the authenticatorData, the signature and the user handle. With --json prints a WebAuthn L3 \
            AuthenticationResponseJSON (id, rawId, type, response.clientDataJSON, \
            response.authenticatorData, response.signature, response.userHandle, \
            clientExtensionResults; binary fields base64url) with rpId, clientDataHash, signCount, \
            userPresent, userVerified and device beside them. When the key holds several accounts for \
            the RP and no --credential narrows them, --user NAME or --user-id B64URL chooses one; \
            without them the accounts are listed on the terminal to choose from, and without a \
            terminal the command stops with a usage error (64) naming them. --appid URL (a legacy \
            U2F AppID on the origin's own site) also looks the --credential IDs up under the AppID; \
            clientExtensionResults.appid then says (true or false) whether it was used.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var ceremony: CeremonyOptions
    @OptionGroup(title: "Through securitykeyd") var daemon: DaemonRouteOptions
    @OptionGroup(title: "Extensions") var extensions: AssertionExtensionOptions
    @OptionGroup(title: "Account") var account: AccountOptions

    // Unconditional: a base64url ID may start with "-" (it is then still the value, not an option).
    @Option(
        name: .long, parsing: .unconditionalSingleValue,
        help: ArgumentHelp("An acceptable credential ID (base64url); repeatable.", valueName: "id"))
    var credential: [String] = []

    var wantsJSON: Bool { global.json }

    func execute() async throws {
        let (request, clientData) = try optionsRequest() ?? flagsRequest()
        try await authenticate(request, clientData: clientData)
    }

    /// The request the relying party's `--options` describe, at `--origin`.
    func optionsRequest() throws -> (SecurityKeyCredentialAssertionRequest, SecurityKeyClientData)? {
        guard let document = try ceremony.optionsDocument() else { return nil }
        guard credential.isEmpty else {
            throw CLIError.usage("--options excludes --credential: the options name them.")
        }
        let options = try PublicKeyCredentialRequestOptionsJSON(json: document)
        let origin = try ceremony.optionsOrigin(relyingPartyIdentifier: options.relyingPartyIdentifier)
        var request = try options.assertionRequest(origin: origin)
        if ceremony.uv { request.userVerificationPreference = .required }
        if ceremony.noUV { request.userVerificationPreference = .discouraged }
        request.appID = extensions.appid ?? request.appID
        if options.timeoutMilliseconds == nil { request.timeout = global.timeoutDuration }
        return (request, request.clientData)
    }

    /// The request the command-line flags describe.
    func flagsRequest() throws -> (SecurityKeyCredentialAssertionRequest, SecurityKeyClientData) {
        var request = try usage { () throws(SecurityKeyError) in
            try ceremony.requestOptions(timeout: global.timeoutDuration).assertionRequest(allowing: credential)
        }
        try extensions.apply(to: &request)
        return (request, request.clientData)
    }

    func authenticate(_ request: SecurityKeyCredentialAssertionRequest, clientData: SecurityKeyClientData)
        async throws
    {
        try daemon.check(device: global.device)
        let assertion: SecurityKeyCredentialAssertion
        do {
            assertion =
                daemon.viaDaemon
                ? try await DaemonCeremony.authenticate(
                    request, route: daemon, pinReader: ceremony.pinReader, account: account.choice)
                : try await ProviderCeremony.perform(
                    .assertion(request), global: global, pinReader: ceremony.pinReader, account: account.choice,
                    \.assertion)
        } catch {
            throw Self.explainMissingCredential(error, request: request)
        }
        try account.choice.check(assertion)
        // Parsed once, by the provider; only the daemon's answer arrives as bytes.
        let authData =
            try assertion.authenticatorData ?? AuthenticatorData(bytes: assertion.rawAuthenticatorData)
        let clientDataHash = assertion.clientDataHash ?? clientData.signedHash(json: assertion.rawClientDataJSON)
        let id = Base64URL.encode(assertion.credentialID)
        let userHandle = assertion.userID.map { Base64URL.encode($0) }
        if global.json {
            return Console.json(
                assertion.json(
                    relyingPartyIdentifier: request.relyingPartyIdentifier, clientDataHash: clientDataHash,
                    authData: authData))
        }
        Console.out("Credential ID:     \(id)")
        Console.out("authenticatorData: \(Base64URL.encode(assertion.rawAuthenticatorData))")
        Console.out("signature:         \(Base64URL.encode(assertion.signature))")
        Console.out("User handle:       \(userHandle ?? "(none)")")
        Console.out("Sign count:        \(authData.signCount)")
        if let json = assertion.rawClientDataJSON { Console.out("clientDataJSON:    \(Base64URL.encode(json))") }
        if assertion.clientExtensionResultsJSON != "{}" {
            Console.out("Extension results: \(assertion.clientExtensionResultsJSON)")
        }
    }

    /// A credential not found without user verification may be one that needs it (credProtect
    /// level 3, userVerificationRequired, hides it until the user is verified): says to add --uv.
    static func explainMissingCredential(_ error: any Error, request: SecurityKeyCredentialAssertionRequest)
        -> any Error
    {
        let failure = CLIError.from(error)
        guard failure.code == SecurityKeyError.Code.noCredentials.rawValue,
            request.userVerificationPreference != .required
        else { return error }
        return CLIError(
            failure.status, code: failure.code,
            failure.message
                + " A credential made with credProtect level 3 (userVerificationRequired) is found only with user verification: add --uv.",
            ctapStatus: failure.ctapStatus)
    }
}
