import ArgumentParser
import CTAP2
import Crypto
import Foundation
import SecurityKeys
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
            "A root certificate (PEM) the attestation certificate must be issued by.", valueName: "file"))
    var trustRoot: String?

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
    }

    func execute() async throws {
        var result: [(String, JSONValue)] = []
        var lines: [String] = []
        var registrationKey: COSEKey?
        var registrationID: String?
        var registrationCount: UInt32 = 0
        var rpID = rp
        if let registration {
            let document = try ResponseDocument(path: registration)
            if rpID == nil { rpID = document.string("rpId") }
            let objectBytes = try document.binary(["response", "attestationObject"])
            let object = try AttestationObject(cbor: objectBytes)
            let clientDataHash = try checkClientData(document, type: "webauthn.create")
            try checkRelyingParty(object.authData, rpID)
            guard let credential = object.authData.attestedCredentialData else {
                throw failed("The registration's authenticator data holds no credential.")
            }
            guard object.authData.userPresent else {
                throw failed("The registration was made without user presence.")
            }
            if let id = document.string("id"), Base64URL.decode(id) != credential.credentialID {
                throw failed("The registration's id is not the credential ID in its attestation object.")
            }
            let verification = try object.verify(clientDataHash: clientDataHash)
            var trusted: Bool?
            if let trustRoot {
                guard let leaf = verification.trustPath.first else {
                    throw failed("--trust-root was given but the attestation carries no certificate.")
                }
                let root = try Self.certificate(readInput(trustRoot))
                guard root.publicKey.isValidSignature(leaf.signature, for: leaf), leaf.issuer == root.subject
                else {
                    throw failed(
                        "The attestation certificate was not issued by the --trust-root certificate.")
                }
                trusted = true
            }
            registrationKey = credential.credentialPublicKey
            registrationID = Base64URL.encode(credential.credentialID)
            registrationCount = object.authData.signCount
            result.append(
                (
                    "registration",
                    .members([
                        ("verified", true),
                        ("format", .string(object.format.rawValue)),
                        ("attestationType", .string(verification.type.rawValue)),
                        ("trustPath", .array(verification.trustPath.map { .string($0.subject.description) })),
                        ("trustRootVerified", trusted.map(JSONValue.bool)),
                        ("credentialId", .string(Base64URL.encode(credential.credentialID))),
                        ("aaguid", .string(credential.aaguid.description.lowercased())),
                        ("signCount", .integer(Int64(object.authData.signCount))),
                        ("userVerified", .bool(object.authData.userVerified)),
                    ])
                ))
            var line = "Registration: \(object.format) attestation (\(verification.type)) verifies"
            if let leaf = verification.trustPath.first { line += "; signed by \(leaf.subject)" }
            if trusted == true { line += ", issued by the trust root" }
            lines.append(line + ".")
        }
        if let assertion {
            let document = try ResponseDocument(path: assertion)
            if rpID == nil { rpID = document.string("rpId") }
            let authData = try AuthenticatorData(bytes: document.binary(["response", "authenticatorData"]))
            let signature = try document.binary(["response", "signature"])
            let clientDataHash = try checkClientData(document, type: "webauthn.get")
            try checkRelyingParty(authData, rpID)
            guard authData.userPresent else { throw failed("The assertion was made without user presence.") }
            if let registrationID, let id = document.string("id"), id != registrationID {
                throw failed(
                    "The assertion was made with credential \(id), not the registered \(registrationID).")
            }
            let message = authData.bytes + clientDataHash
            if let publicKey {
                let key = try Self.certificatePublicKey(readInput(publicKey))
                guard let verifier = SignaturePublicKey(key) else {
                    throw CLIError(
                        .notSupported, code: "unsupported-algorithm",
                        "The --public-key is of an unsupported kind.")
                }
                try verifier.verifySignature(
                    signature, for: message, algorithm: Self.defaultAlgorithm(verifier))
            } else if let registrationKey {
                try registrationKey.verifySignature(signature, for: message)
            }
            if registrationCount > 0 || authData.signCount > 0, authData.signCount <= registrationCount {
                throw failed(
                    "The signature counter did not grow (\(authData.signCount) after \(registrationCount)): the key may be cloned."
                )
            }
            result.append(
                (
                    "assertion",
                    .members([
                        ("verified", true),
                        ("signCount", .integer(Int64(authData.signCount))),
                        ("userPresent", .bool(authData.userPresent)),
                        ("userVerified", .bool(authData.userVerified)),
                    ])
                ))
            lines.append("Assertion: the signature verifies (sign count \(authData.signCount)).")
        }
        if json {
            Console.json(.object([("verified", true)] + result))
        } else {
            for line in lines { Console.out(line) }
        }
    }

    private func failed(_ message: String) -> CLIError {
        CLIError(.verificationFailed, code: "verification-failed", message)
    }

    /// Checks the client data's type, challenge and origin; returns its hash.
    private func checkClientData(_ document: ResponseDocument, type: String) throws -> [UInt8] {
        guard document.has(["response", "clientDataJSON"]) else {
            // register/authenticate --client-data-hash: the hash is all there is.
            guard let text = document.string("clientDataHash"), let hash = Base64URL.decode(text),
                hash.count == 32
            else {
                throw CLIError.invalidInput("The response holds neither clientDataJSON nor a clientDataHash.")
            }
            return hash
        }
        let bytes = try document.binary(["response", "clientDataJSON"])
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw failed("The clientDataJSON is not a JSON object.")
        }
        guard object["type"] as? String == type else {
            throw failed(
                "The client data's type is \(object["type"].map { "\($0)" } ?? "missing"), not \(type).")
        }
        if let challenge, object["challenge"] as? String != challenge {
            throw failed("The client data's challenge is not the expected one.")
        }
        if let origin, object["origin"] as? String != origin {
            throw failed(
                "The client data's origin is \(object["origin"].map { "\($0)" } ?? "missing"), not \(origin)."
            )
        }
        return Array(SHA256.hash(data: bytes))
    }

    private func checkRelyingParty(_ authData: AuthenticatorData, _ rpID: String?) throws {
        guard let rpID else { return }
        guard authData.rpIDHash == Array(SHA256.hash(data: Array(rpID.utf8))) else {
            throw failed("The authenticator data is for another relying party than \(rpID).")
        }
    }

    static func defaultAlgorithm(_ key: SignaturePublicKey) -> COSEAlgorithm {
        switch key {
        case .p256: .es256
        case .p384: .es384
        case .p521: .es512
        case .ed25519: .edDSA
        case .rsa: .rs256
        }
    }

    static func certificate(_ bytes: [UInt8]) throws -> Certificate {
        do { return try Certificate(pemEncoded: String(decoding: bytes, as: UTF8.self)) } catch {
            do { return try Certificate(derEncoded: bytes) } catch {
                throw CLIError.invalidInput("The certificate is neither PEM nor DER.")
            }
        }
    }

    static func certificatePublicKey(_ bytes: [UInt8]) throws -> Certificate.PublicKey {
        do { return try Certificate.PublicKey(pemEncoded: String(decoding: bytes, as: UTF8.self)) } catch {
            throw CLIError.invalidInput("The public key is not a PEM SubjectPublicKeyInfo.")
        }
    }
}

/// Reads a file, or standard input for `-`, up to 16 MiB.
func readInput(_ path: String) throws -> [UInt8] {
    let limit = 16 << 20
    let data: Data?
    if path == "-" {
        data = try? FileHandle.standardInput.read(upToCount: limit + 1)
    } else {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CLIError(.failure, code: "io", "Cannot read \(path).")
        }
        defer { try? handle.close() }
        data = try? handle.read(upToCount: limit + 1)
    }
    let bytes = [UInt8](data ?? Data())
    guard bytes.count <= limit else { throw CLIError.invalidInput("\(path) is larger than 16 MiB.") }
    return bytes
}

/// A WebAuthn response JSON document, read defensively.
struct ResponseDocument {
    let root: [String: Any]
    let path: String

    init(path: String) throws {
        self.path = path
        let bytes = try readInput(path)
        guard let root = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw CLIError.invalidInput("\(path) is not a JSON object.")
        }
        self.root = root
    }

    func string(_ key: String) -> String? { root[key] as? String }

    func has(_ keys: [String]) -> Bool { value(keys) != nil }

    private func value(_ keys: [String]) -> Any? {
        var current: Any? = root
        for key in keys { current = (current as? [String: Any])?[key] }
        return current
    }

    /// A base64url member, decoded.
    func binary(_ keys: [String]) throws -> [UInt8] {
        guard let text = value(keys) as? String else {
            throw CLIError.invalidInput("\(path) lacks \(keys.joined(separator: ".")).")
        }
        guard let bytes = Base64URL.decode(text) else {
            throw CLIError.invalidInput("\(keys.joined(separator: ".")) in \(path) is not base64url.")
        }
        return bytes
    }
}
