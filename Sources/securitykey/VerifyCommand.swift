import _SecurityKeyInternals
import ArgumentParser
import CBOR
import CTAP2
import FoundationEssentials
import SecurityKeys
import WebAuthnVerification
import X509

/// `securitykey verify`: checks registration and assertion outputs as a relying party would.
struct VerifyCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify an attestation or an assertion signature (like fido2-cred -V / fido2-assert -V).",
        discussion: """
            --registration takes a RegistrationResponseJSON (the output of `register --json`, or what a \
            browser sends) and checks its attestation statement against its client data. --assertion \
            takes an AuthenticationResponseJSON and checks its signature with the public key of \
            --registration, or of --public-key (a PEM SubjectPublicKeyInfo). Files may be `-` for \
            standard input. Exits 2 when something does not verify.
            """)

    @Option(name: .long, help: ArgumentHelp("A registration response (JSON file).", valueName: "file"))
    var registration: String?

    @Option(name: .long, help: ArgumentHelp("An authentication response (JSON file).", valueName: "file"))
    var assertion: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The credential public key, PEM (for --assertion).", valueName: "file"))
    var publicKey: String?

    @Option(name: .long, help: ArgumentHelp("The expected relying party ID.", valueName: "id"))
    var rp: String?

    @Option(name: .long, help: ArgumentHelp("The expected challenge, base64url.", valueName: "b64url"))
    var challenge: String?

    @Option(name: .long, help: ArgumentHelp("The expected origin.", valueName: "url"))
    var origin: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Trust anchors the attestation certificate path must lead to: a PEM bundle, a DER certificate, or a directory of them.",
            valueName: "path"))
    var trustRoot: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Check certificate validity as of this moment (RFC 3339, e.g. 2024-01-31T12:00:00Z, or a date: 2024-01-31) instead of now.",
            valueName: "time"))
    var verifyTime: String?

    @Flag(name: .long, help: "Check the attestation against the cached FIDO metadata (see `mds update`).")
    var mds = false

    @Flag(
        name: .long,
        help: "With --mds or --trust-root: fail when a CRL the attestation certificates name cannot be fetched, verified or is out of date."
    )
    var requireRevocation = false

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    var wantsJSON: Bool { json }

    func validate() throws {
        guard registration != nil || assertion != nil else {
            throw ValidationError("Give --registration, --assertion, or both.")
        }
        if assertion != nil, registration == nil, publicKey == nil {
            throw ValidationError("--assertion needs the public key: --registration or --public-key.")
        }
        if let verifyTime, InternetDateTime.secondsSince1970(verifyTime) == nil {
            throw ValidationError(Self.timeFormat(verifyTime))
        }
        if requireRevocation, !mds, trustRoot == nil {
            throw ValidationError("--require-revocation needs --mds or --trust-root.")
        }
    }

    func execute() async throws {
        do {
            try await verifyResponses()
        } catch let error as WebAuthnVerificationError {
            throw CLIError(error)
        }
    }

    // Swift 6.3.1 crashes (signal 11 in LLVM's coroutine splitting) compiling this async
    // function with optimization; it runs once per `verify`, so it is built unoptimized.
    @_optimize(none)
    private func verifyResponses() async throws {
        var result: [(String, JSONValue)] = []
        var lines: [String] = []
        var record: CredentialRecord?
        var rpID = rp
        var metadata: MetadataCacheStatus?
        let expectedChallenge = try challenge.map { (text) throws -> [UInt8] in
            // An undecodable --challenge cannot match any client data.
            guard let bytes = Base64URL.decode(text) else {
                throw CLIError(
                    .verificationFailed, code: "verification-failed",
                    "The client data's challenge is not the expected one.")
            }
            return bytes
        }
        if let registration {
            let document = try Self.document(registration)
            if rpID == nil { rpID = document.string("rpId") }
            let object = try AttestationObject(cbor: document.binary(["response", "attestationObject"]))
            let response = RegistrationResponse(
                id: document.string("id"), clientData: try clientData(document), attestationObject: object)
            let validationTime = try verifyTime.map(Self.moment)
            let anchors = try trustRoot.map { (path) throws -> AttestationTrustAnchors in
                if path == "-" { return AttestationTrustAnchors(try AttestationTrustAnchors.parse(readInput(path))) }
                return try AttestationTrustAnchors(contentsOf: path)
            }
            // The cache is read whenever it exists: its age is reported, a stale one warned about.
            // A damaged cache fails only the checks that need it (--mds).
            metadata = mds ? try MDSCLI.cacheStatus(required: true) : try? MDSCLI.cacheStatus()
            let verifier = RegistrationVerifier(
                policy: RelyingPartyPolicy(
                    relyingPartyID: rpID, origin: origin, challenge: expectedChallenge, for: response.clientData),
                trustPolicy: RegistrationVerifier.trustPolicy(
                    metadata: mds ? try MDSCLI.loadCache().payload : nil, anchors: anchors,
                    validationTime: validationTime, requiresRevocation: requireRevocation))
            let verified: VerifiedRegistration
            do {
                verified = try await verifier.verify(response)
            } catch {
                if mds || [.certificateRevoked, .revocationNotChecked].contains(error.code) { throw MDSCLI.cliError(error) }
                throw Self.trustRootFailure(error) ?? error
            }
            MDSCLI.warnUnlessRevocationChecked(verified.attestation.revocation)
            let model =
                metadata != nil
                ? MDSCLI.cache.entry(
                    aaguid: verified.aaguid, attestationCertificate: verified.attestation.trustPath.first)
                : nil
            record = verified.credentialRecord
            result.append(
                ("registration", verified.json(metadataChecked: metadata != nil, model: model)))
            lines.append(verified.summary(model: model))
            if let metadata { lines.append(metadata.summary) }
        }
        if let assertion {
            let document = try Self.document(assertion)
            if rpID == nil { rpID = document.string("rpId") }
            let response = AssertionResponse(
                id: document.string("id"), clientData: try clientData(document),
                authenticatorData: try AuthenticatorData(
                    bytes: document.binary(["response", "authenticatorData"])),
                signature: try document.binary(["response", "signature"]))
            var credential = record
            if let publicKey {
                // The registration (when given) still names the credential and its counter.
                credential = CredentialRecord(
                    publicKey: try Self.certificatePublicKey(readInput(publicKey)), id: record?.id,
                    signCount: record?.signCount ?? 0)
                guard credential != nil else {
                    throw CLIError(
                        .notSupported, code: "unsupported-algorithm",
                        "The --public-key is of an unsupported kind.")
                }
            }
            guard let credential else { throw ValidationError("--assertion needs the public key.") }
            let verified = try AssertionVerifier(
                policy: RelyingPartyPolicy(
                    relyingPartyID: rpID, origin: origin, challenge: expectedChallenge, for: response.clientData)
            ).verify(response, credential: credential)
            result.append(("assertion", verified.json))
            lines.append("Assertion: the signature verifies (sign count \(verified.signCount)).")
        }
        if json {
            if let metadata { result.append(("metadata", metadata.json)) }
            Console.json(.object([("verified", true)] + result))
        } else {
            for line in lines { Console.out(line) }
        }
    }

    /// The response document in the file at `path` (`-`: standard input).
    static func document(_ path: String) throws -> WebAuthnResponseDocument {
        try WebAuthnResponseDocument(readInput(path), path: path)
    }

    /// The CLI's own sentences for the --trust-root checks.
    private static func trustRootFailure(_ error: WebAuthnVerificationError) -> CLIError? {
        switch error.code {
        case .attestationCertificateMissing:
            CLIError(
                .verificationFailed, code: "verification-failed",
                "--trust-root was given but the attestation carries no certificate.")
        case .untrustedAttestation:
            CLIError(
                .verificationFailed, code: "verification-failed",
                "The attestation certificate does not lead to a --trust-root anchor: \(error.message)")
        case .invalidTrustAnchor:
            CLIError.invalidInput(error.message)
        default: nil
        }
    }

    /// The response's clientDataJSON, or the bare hash `register`/`authenticate
    /// --client-data-hash` write instead.
    private func clientData(_ document: WebAuthnResponseDocument) throws -> ClientDataInput {
        if document.has(["response", "clientDataJSON"]) {
            return .json(try document.binary(["response", "clientDataJSON"]))
        }
        guard let text = document.string("clientDataHash"), let hash = Base64URL.decode(text),
            hash.count == 32
        else {
            throw CLIError.invalidInput("The response holds neither clientDataJSON nor a clientDataHash.")
        }
        return .hash(hash)
    }

    /// Parses a `--verify-time` value (every command's, with the one parser).
    static func moment(_ text: String) throws(CLIError) -> Date {
        guard let seconds = InternetDateTime.secondsSince1970(text) else { throw CLIError.usage(timeFormat(text)) }
        return Date(timeIntervalSince1970: seconds)
    }

    /// What `--verify-time` takes, for a value it does not.
    static func timeFormat(_ text: String) -> String {
        "--verify-time takes an RFC 3339 time (2024-12-16T00:00:00Z) or a date (2024-12-16), not \"\(text)\"."
    }

    static func certificatePublicKey(_ bytes: [UInt8]) throws -> Certificate.PublicKey {
        do { return try Certificate.PublicKey(pemEncoded: String(decoding: bytes, as: UTF8.self)) } catch {
            throw CLIError.invalidInput("The public key is not a PEM SubjectPublicKeyInfo.")
        }
    }
}

/// Reads a file, or standard input for `-`, up to `limit` bytes (16 MiB unless given); a larger
/// input is `tooLarge`, or an `invalid-input` error naming the limit.
func readInput(_ path: String, limit: Int = 16 << 20, tooLarge: CLIError? = nil) throws -> [UInt8] {
    let read =
        path == "-"
        ? FileIO.read(descriptor: FileIO.standardInput, upTo: limit + 1)
        : FileIO.read(path: path, upTo: limit + 1)
    guard let bytes = read else { throw CLIError(.failure, code: "io", "Cannot read \(path).") }
    guard bytes.count <= limit else {
        throw tooLarge ?? CLIError.invalidInput("\(path) is larger than \(limit >> 20) MiB.")
    }
    return bytes
}
