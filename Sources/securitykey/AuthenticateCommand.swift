import ArgumentParser
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
            userPresent, userVerified, numberOfCredentials and device beside them.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var ceremony: CeremonyOptions

    @Option(
        name: .long,
        help: ArgumentHelp("An acceptable credential ID (base64url); repeatable.", valueName: "id"))
    var credential: [String] = []

    var wantsJSON: Bool { global.json }

    func execute() async throws {
        var allow: [[UInt8]] = []
        for text in credential {
            guard let id = Base64URL.decode(text), !id.isEmpty else {
                throw CLIError.usage("--credential takes a base64url credential ID, not \"\(text)\".")
            }
            allow.append(id)
        }
        let clientData = try ceremony.clientData(.get)
        try await withSession(global) { session in
            let info = try await session.getInfo()
            let client = WebAuthnCeremony(
                session: session, info: info, pinReader: PINReader(fromStandardInput: ceremony.pinStdin),
                timeout: global.timeoutDuration)
            let response = try await client.getAssertion(
                rpID: ceremony.rp, allow: allow, clientData: clientData, uv: ceremony.uv)
            guard let credentialID = response.credential?.id ?? (allow.count == 1 ? allow.first : nil) else {
                throw CLIError(
                    .failure, code: "malformed-response", "The key did not say which credential it used.")
            }
            let id = Base64URL.encode(credentialID)
            let userHandle = response.user.map { Base64URL.encode($0.id) }
            if global.json {
                Console.json(
                    .members([
                        ("id", .string(id)),
                        ("rawId", .string(id)),
                        ("type", "public-key"),
                        ("authenticatorAttachment", "cross-platform"),
                        (
                            "response",
                            .members([
                                ("clientDataJSON", clientData.json.map { .string(Base64URL.encode($0)) }),
                                ("authenticatorData", .string(Base64URL.encode(response.authData.bytes))),
                                ("signature", .string(Base64URL.encode(response.signature))),
                                ("userHandle", userHandle.map(JSONValue.string) ?? .null),
                            ])
                        ),
                        ("clientExtensionResults", .object([])),
                        ("rpId", .string(ceremony.rp)),
                        ("clientDataHash", .string(Base64URL.encode(clientData.hash))),
                        ("signCount", .integer(Int64(response.authData.signCount))),
                        ("userPresent", .bool(response.authData.userPresent)),
                        ("userVerified", .bool(response.authData.userVerified)),
                        ("numberOfCredentials", response.numberOfCredentials.map { .unsigned($0) }),
                        ("device", .string(session.connection.descriptor.uri)),
                    ]))
                return
            }
            Console.out("Credential ID:     \(id)")
            Console.out("authenticatorData: \(Base64URL.encode(response.authData.bytes))")
            Console.out("signature:         \(Base64URL.encode(response.signature))")
            Console.out("User handle:       \(userHandle ?? "(none)")")
            Console.out("Sign count:        \(response.authData.signCount)")
            if let json = clientData.json { Console.out("clientDataJSON:    \(Base64URL.encode(json))") }
            if let n = response.numberOfCredentials, n > 1 {
                Console.err("The key holds \(n) credentials for \(ceremony.rp); the first one signed.")
            }
        }
    }
}
