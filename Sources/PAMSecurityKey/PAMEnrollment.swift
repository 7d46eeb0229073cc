import Authenticators
import CTAP2
import Crypto
import Transport
import _SecurityKeyInternals

/// A new credential for pam-u2f's file and this module, made as `pamu2fcfg` makes one: a
/// credential for the origin (`pam://HOST`) with a random user ID and the user's name, and the
/// line both modules read.
public struct PAMEnrollment: Sendable {
    /// The user the line is for.
    public var user: String
    /// The relying-party ID (pam-u2f's `origin`).
    public var origin: String
    /// `+pin`: the PIN on every authentication.
    public var requiresPIN = false
    /// `+verification`: user verification (PIN or built-in) on every authentication.
    public var requiresVerification = false
    /// A resident (discoverable) credential, listed as `*`.
    public var resident = false
    /// The COSE algorithm (ES256, EdDSA or RS256).
    public var algorithm: COSEAlgorithm = .es256

    /// An enrolment of `user` for `origin`.
    public init(user: String, origin: String) {
        self.user = user
        self.origin = origin
    }

    /// Whether `name` can stand at the start of an authorization file's line: not empty, no
    /// `:` (which ends the name) and no line break (which ends the line).
    public static func isValidUser(_ name: String) -> Bool {
        // Bytes, as the file is read (AuthorizationFile.lines(of:)): as Characters, "\r\n" is
        // not "\n", and ":" with a combining mark after it is not ":".
        !name.isEmpty && !name.utf8.contains(UInt8(ascii: ":")) && !name.utf8.contains(UInt8(ascii: "\n"))
    }

    /// The COSE algorithm of a type name pam-u2f writes (`es256`, `eddsa`, `rs256`); nil for
    /// any other.
    public static func algorithm(typeName: String) -> COSEAlgorithm? {
        PAMCredential.typeNames.first { $0.name == typeName }?.algorithm
    }

    /// The attributes written: always `+presence` (a touch), and the verification asked for.
    public var attributes: PAMCredential.Attributes {
        var attributes: PAMCredential.Attributes = [.presence]
        if requiresPIN { attributes.insert(.pin) }
        if requiresVerification { attributes.insert(.verification) }
        return attributes
    }

    /// Makes the credential on `key`: verification by the PIN (through `interaction`) or the
    /// key's built-in means when the options or the key ask for it, then one touch.
    public func enroll(on key: Authenticator, interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError) -> PAMCredential
    {
        guard PAMCredential.typeNames.contains(where: { $0.algorithm == algorithm }) else {
            throw AuthenticatorError(.notSupported, "pam-u2f reads es256, eddsa and rs256 credentials only.")
        }
        let info = await key.info
        if info.isU2FOnly { return try await enrollThroughU2F(on: key, deadline: deadline) }
        let offered = info.algorithms.map(\.algorithm)
        guard offered.isEmpty || offered.contains(algorithm) else {
            throw AuthenticatorError(.notSupported, "The security key does not make \(algorithm) credentials.", deviceURI: key.uri)
        }
        let pinSet = info.options.isEnabled(.clientPIN)
        let keyDemandsIt = pinSet && (resident || !info.options.isEnabled(.makeCredentialUVNotRequired))
        let response = try await Authenticator.withCeremony(on: key) { () throws(AuthenticatorError) in
            var verification = UserVerification.none
            if requiresPIN {
                verification = .token(
                    try await key.pinToken(
                        permissions: [.makeCredential], rpID: origin, interaction: interaction, deadline: deadline))
            } else if requiresVerification || keyDemandsIt {
                verification = try await key.verifyUser(
                    permissions: [.makeCredential], rpID: origin, interaction: interaction, deadline: deadline)
            }
            defer { verification.wipe() }
            var request = MakeCredentialRequest(
                clientDataHash: SystemRandom.bytes(32), rp: RelyingPartyEntity(id: origin, name: origin),
                user: UserEntity(id: SystemRandom.bytes(32), name: user, displayName: user),
                pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: algorithm)],
                options: CommandOptions(
                    residentKey: resident ? true : nil,
                    userVerification: verification.token == nil && (requiresVerification || keyDemandsIt) ? true : nil))
            do throws(CTAP2Error) {
                if let token = verification.token { try request.authorize(with: token) }
                return try await key.session.makeCredential(request, deadline: deadline)
            } catch {
                throw AuthenticatorError(error, deviceURI: key.uri)
            }
        }
        guard let credential = response.authData.attestedCredentialData else {
            throw AuthenticatorError(.unexpectedAnswer, "The security key's reply carries no new credential.", deviceURI: key.uri)
        }
        do throws(PAMFailure) {
            return try PAMCredential(
                credentialID: resident ? nil : credential.credentialID, coseKey: credential.credentialPublicKey,
                attributes: attributes)
        } catch {
            throw AuthenticatorError(.unexpectedAnswer, "The security key returned an unusable public key: \(error.message)", deviceURI: key.uri)
        }
    }
}

extension PAMEnrollment {
    /// The credential on a key that speaks only CTAP1/U2F, as libfido2 makes it for pamu2fcfg
    /// (CTAP 2.1 §10.2.1): U2F_REGISTER with SHA-256 of the origin, an es256 `+presence` line.
    /// U2F stores nothing and verifies no user: a resident credential, the PIN or user
    /// verification is refused rather than left out of the line.
    func enrollThroughU2F(on key: Authenticator, deadline: Deadline) async throws(AuthenticatorError) -> PAMCredential {
        guard !requiresPIN, !requiresVerification, !resident, algorithm == .es256 else {
            throw AuthenticatorError(
                .notSupported,
                "The security key speaks only U2F: it makes es256 credentials that are not resident, and verifies no user.",
                deviceURI: key.uri)
        }
        let response: U2FRegistrationResponse
        let publicKey: COSEKey
        do throws(CTAP2Error) {
            response = try await key.session.u2fRegister(
                challenge: SystemRandom.bytes(32), application: Array(SHA256.hash(data: Array(origin.utf8))),
                deadline: deadline)
            publicKey = try response.credentialPublicKey
        } catch {
            throw AuthenticatorError(error, deviceURI: key.uri)
        }
        do throws(PAMFailure) {
            return try PAMCredential(credentialID: response.keyHandle, coseKey: publicKey, attributes: attributes)
        } catch {
            throw AuthenticatorError(.unexpectedAnswer, "The security key returned an unusable public key: \(error.message)", deviceURI: key.uri)
        }
    }
}

extension AuthorizationFile {
    /// `text` (an authorization file, checked first) with `credential` added to `user`'s line,
    /// or a new line for them at the end. pam-u2f reads only a user's last line, so a
    /// credential is added to it rather than in a line of its own.
    public static func adding(_ credential: PAMCredential, for user: String, to text: [UInt8]) throws(PAMFailure) -> String {
        _ = try credentials(for: user, in: text, maxDevices: Int.max)
        // Lines and names as the reader splits and compares them: on bytes.
        var lines = split(Substring(String(decoding: text, as: UTF8.self)), at: UInt8(ascii: "\n")).map(String.init)
        if lines.last == "" { lines.removeLast() }
        if let index = lines.lastIndex(where: { line in
            split(Substring(line), at: UInt8(ascii: ":")).first.map { sameBytes($0, user) } ?? false
        }) {
            lines[index] = droppingCR(Substring(lines[index])) + ":" + credential.entry
        } else {
            lines.append(line(user: user, credentials: [credential]))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
