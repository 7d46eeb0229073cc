import _SecurityKeyInternals
import ArgumentParser
import CBOR
import CTAP2
import SecurityKeys

/// `securitykey register`: makes a credential (WebAuthn registration).
struct RegisterCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Register a new credential on the key (makeCredential).",
        discussion: """
            Prints the credential ID, the public key (PEM and COSE), the attestationObject and the \
            clientDataJSON. With --json prints a WebAuthn L3 RegistrationResponseJSON (id, rawId, type, \
            response.clientDataJSON, response.attestationObject, response.authenticatorData, \
            response.publicKey, response.publicKeyAlgorithm, response.transports, \
            clientExtensionResults; binary fields base64url) with rpId, userId, publicKeyPEM, \
            publicKeyCOSE, attestationFormat, device and the credProtect and minPinLength outputs beside \
            them. Extension options (--prf, --cred-protect, ...) are described in Docs/CLI.md.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var ceremony: CeremonyOptions
    @OptionGroup(title: "Through securitykeyd") var daemon: DaemonRouteOptions
    @OptionGroup(title: "Extensions") var extensions: RegistrationExtensionOptions

    @Option(
        name: .long, help: ArgumentHelp("The user's account name (not with --options).", valueName: "name"))
    var user: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The user's display name (default: the account name).", valueName: "name"))
    var displayName: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The user handle, base64url (random 16 bytes when absent).", valueName: "b64url"))
    var userID: String?

    @Flag(name: .long, help: "Make a discoverable (resident) credential.")
    var resident = false

    // Unconditional, repeatable: COSE numbers are negative (--alg -257), names are not options.
    @Option(
        name: .long, parsing: .unconditionalSingleValue,
        help: ArgumentHelp(
            "An acceptable algorithm (es256, eddsa, es384, es512, es256k, rs256, ps256, mldsa65, mldsa87 or a COSE number such as -257), preferred first; repeatable or comma-separated (default: es256 eddsa).",
            valueName: "alg")
    )
    var alg: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("Attestation conveyance: none, direct or enterprise.", valueName: "kind"))
    var attestation: String = "direct"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "An attestation statement format wanted (packed, none, tpm, ...), best first; repeatable. Sent to keys that list attestationFormats (CTAP 2.2).",
            valueName: "format"))
    var attestationFormat: [String] = []

    @Option(
        name: .long, parsing: .unconditionalSingleValue,
        help: ArgumentHelp(
            "A credential ID (base64url) the key must not hold already; repeatable.", valueName: "id"))
    var exclude: [String] = []

    var wantsJSON: Bool { global.json }

    func validate() throws {
        if ceremony.options != nil {
            guard user == nil, displayName == nil, userID == nil, !resident, alg.isEmpty, exclude.isEmpty
            else {
                throw ValidationError(
                    "--options excludes --user, --display-name, --user-id, --resident, --alg and --exclude: the options name them."
                )
            }
        } else if user == nil {
            throw ValidationError("Missing expected argument '--user <name>' (or --options).")
        }
        guard ["none", "direct", "enterprise"].contains(attestation) else {
            throw ValidationError("--attestation takes none, direct or enterprise.")
        }
        if attestationFormat.count > 16 || attestationFormat.contains(where: \.isEmpty) {
            throw ValidationError("--attestation-format takes up to 16 format names.")
        }
    }

    func execute() async throws {
        let (request, userHandle, clientData) = try optionsRequest() ?? flagsRequest()
        try await register(request, userHandle: userHandle, clientData: clientData)
    }

    /// The request the relying party's `--options` describe, at `--origin`.
    func optionsRequest() throws -> (SecurityKeyCredentialRegistrationRequest, [UInt8], SecurityKeyClientData)? {
        guard let document = try ceremony.optionsDocument() else { return nil }
        let options = try PublicKeyCredentialCreationOptionsJSON(json: document)
        let origin = try ceremony.optionsOrigin(relyingPartyIdentifier: options.relyingPartyIdentifier)
        var request = try options.registrationRequest(origin: origin)
        if ceremony.uv { request.userVerificationPreference = .required }
        if ceremony.noUV { request.userVerificationPreference = .discouraged }
        if options.timeoutMilliseconds == nil { request.timeout = global.timeoutDuration }
        return (request, options.userID, request.clientData)
    }

    /// The request the command-line flags describe.
    func flagsRequest() throws -> (SecurityKeyCredentialRegistrationRequest, [UInt8], SecurityKeyClientData) {
        let registration = SecurityKeyRequestOptions.Registration(
            user: user ?? "", displayName: displayName, userID: userID, resident: resident, algorithms: alg,
            attestation: attestation, attestationFormats: attestationFormat, excludedCredentials: exclude)
        var (request, userHandle) = try usage { () throws(SecurityKeyError) in
            try ceremony.requestOptions(timeout: global.timeoutDuration).registrationRequest(registration)
        }
        try extensions.apply(to: &request)
        return (request, userHandle, request.clientData)
    }

    func register(
        _ request: SecurityKeyCredentialRegistrationRequest, userHandle: [UInt8],
        clientData: SecurityKeyClientData
    ) async throws {
        try daemon.check(device: global.device)
        let registration =
            daemon.viaDaemon
            ? try await DaemonCeremony.register(request, route: daemon, pinReader: ceremony.pinReader)
            : try await ProviderCeremony.perform(
                .registration(request), global: global, pinReader: ceremony.pinReader, \.registration)
        // Parsed once, by the provider; only the daemon's answer arrives as bytes.
        let attested = try SecurityKeyAttestedCredential(registration)
        let credential = attested.credential, publicKey = attested.publicKey
        let clientDataHash = registration.clientDataHash ?? clientData.signedHash(json: registration.rawClientDataJSON)
        let id = Base64URL.encode(credential.credentialID)
        if global.json {
            return Console.json(
                attested.json(
                    registration, relyingPartyIdentifier: request.relyingPartyIdentifier, userHandle: userHandle,
                    clientDataHash: clientDataHash))
        }
        Console.out("Credential ID:      \(id)")
        Console.out("User handle:        \(Base64URL.encode(userHandle))")
        Console.out(
            "Algorithm:          \(credential.credentialPublicKey.algorithm.map { "\($0)" } ?? "unstated")")
        Console.out("Attestation format: \(attested.attestationObject.format)")
        Console.out("Public key (COSE):  \(Base64URL.encode(credential.credentialPublicKey.cborEncoded))")
        Console.out("Public key (PEM):")
        Console.out(publicKey.pemRepresentation, terminator: "")
        Console.out("attestationObject:  \(Base64URL.encode(registration.rawAttestationObject))")
        if let json = registration.rawClientDataJSON { Console.out("clientDataJSON:     \(Base64URL.encode(json))") }
        let outputs = registration.authenticatorExtensionOutputs
        if let level = outputs.credProtect { Console.out("credProtect:        \(level)") }
        if let length = outputs.minPINLength { Console.out("minPinLength:       \(length)") }
        if registration.clientExtensionResultsJSON != "{}" {
            Console.out("Extension results:  \(registration.clientExtensionResultsJSON)")
        }
    }
}
