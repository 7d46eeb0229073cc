import Authenticators
import CTAP2
import Crypto
import Glibc
import Logging
import Transport
import WebAuthnVerification
import _SecurityKeyInternals

extension PAMAuthentication {
    /// pam-u2f's cue when `cue_prompt=` is not given.
    public static let defaultCue = "Please touch the device."
    /// pam-u2f's `interactive` prompt when `prompt=` is not given.
    public static let defaultInteractivePrompt = "Insert your U2F device, then press ENTER."

    /// Finds the key holding one of the user's credentials and asks it for an assertion,
    /// verified with the listed public key; the result a PAM stack expects. Every key opened is
    /// closed; nothing takes longer than ``PAMModuleOptions/timeout`` once the keys are searched.
    public func run(conversation: any PAMConversation, logger: Logger) async -> Result<Void, PAMFailure> {
        if options.interactive {
            _ = await conversation.ask(options.prompt ?? Self.defaultInteractivePrompt, echo: true)
        }
        let deadline = Deadline.after(options.timeout)
        let keys: [Authenticator]
        do throws(AuthenticatorError) { keys = try await directory.openPresent(deadline: deadline) } catch {
            let why = error.code == .permissionDenied ? ": one is present but may not be opened (\(error.message))" : ""
            return .failure(PAMFailure(.authInfoUnavailable, "No security key is present\(why)."))
        }
        let result: Result<Void, PAMFailure>
        do throws(PAMFailure) {
            try await authenticate(with: keys, conversation: conversation, deadline: deadline, logger: logger)
            result = .success(())
        } catch {
            result = .failure(error)
        }
        for key in keys { await key.close() }
        return result
    }

    /// The (key, credential) pairs to try, in the file's order: each credential on the keys a
    /// silent probe finds it on (any key for a resident credential, or with `nodetect`). A
    /// credential a key hides without verification (credProtect) is tried on the only key present.
    func candidates(_ keys: [Authenticator], deadline: Deadline, logger: Logger) async
        -> [(key: Authenticator, credential: PAMCredential)]
    {
        var pairs: [(key: Authenticator, credential: PAMCredential)] = []
        for credential in credentials {
            for key in keys {
                guard let id = credential.credentialID, !options.noDetect else {
                    pairs.append((key, credential))
                    continue
                }
                if await holds(id, on: key, deadline: deadline) {
                    logger.debug("credential found", metadata: ["device": "\(key.uri)"])
                    pairs.append((key, credential))
                }
            }
        }
        if pairs.isEmpty, keys.count == 1, let only = keys.first {
            pairs = credentials.filter { needsVerification($0) }.map { (only, $0) }
        }
        return pairs
    }

    func authenticate(
        with keys: [Authenticator], conversation: any PAMConversation, deadline: Deadline, logger: Logger
    ) async throws(PAMFailure) {
        let pairs = await candidates(keys, deadline: deadline, logger: logger)
        guard !pairs.isEmpty else {
            throw PAMFailure(
                .authError,
                keys.count == 1
                    ? "The security key present holds no credential listed for \(user.name)."
                    : "None of the \(keys.count) security keys present holds a credential listed for \(user.name).")
        }
        // One touch: the first pair; the next only when a key turned out not to hold the
        // credential after all (nodetect, a credential the probe could not see), which asked
        // nothing of the user.
        var failure = PAMFailure(.authError, "No assertion.")
        var cued = false
        for pair in pairs {
            do throws(PAMFailure) {
                try await assert(
                    pair.credential, on: pair.key, conversation: conversation, cued: &cued, deadline: deadline,
                    logger: logger)
                return
            } catch {
                failure = error
                guard error.keyLacksCredential else { throw error }
            }
        }
        throw failure
    }

    /// Whether `key` holds the credential `id`, asked without a touch: a getAssertion with
    /// up=false, or a check-only U2F_AUTHENTICATE on a U2F-only key (as libfido2 does for them).
    func holds(_ id: [UInt8], on key: Authenticator, deadline: Deadline) async -> Bool {
        guard await key.isU2FOnly else { return await key.holdsCredential(id, rpID: relyingPartyID, deadline: deadline) }
        guard (1...255).contains(id.count) else { return false }
        return (try? await key.session.u2fCheck(keyHandle: id, application: rpIDHash, deadline: deadline)) ?? false
    }

    /// SHA-256 of the relying-party ID: the authenticator data's first member, U2F's application.
    var rpIDHash: [UInt8] { Array(SHA256.hash(data: Array(relyingPartyID.utf8))) }

    func needsVerification(_ credential: PAMCredential) -> Bool {
        credential.attributes.contains(.pin) || credential.attributes.contains(.verification)
            || options.pinVerification == .required || options.userVerification == .required
    }

    /// One assertion by `credential` on `key`, verified: the touch and verification the file
    /// and the line ask for (pam-u2f's rules), the PIN through the conversation.
    func assert(
        _ credential: PAMCredential, on key: Authenticator, conversation: any PAMConversation, cued: inout Bool,
        deadline: Deadline, logger: Logger
    ) async throws(PAMFailure) {
        let coseKey = try credential.coseKey()
        if await key.isU2FOnly {
            try await assertThroughU2F(
                credential, on: key, coseKey: coseKey, conversation: conversation, cued: &cued, deadline: deadline,
                logger: logger)
            return
        }
        let presence: Bool? =
            options.userPresence == .required || credential.attributes.contains(.presence)
            ? true : options.userPresence == .discouraged ? false : nil
        let usePIN = options.pinVerification == .required || credential.attributes.contains(.pin)
        let verify = usePIN || options.userVerification == .required || credential.attributes.contains(.verification)
        let interaction = PAMInteraction(conversation: conversation)
        logger.debug(
            "asking for an assertion",
            metadata: [
                "device": "\(key.uri)", "up": "\(presence.map { "\($0)" } ?? "default")", "uv": "\(verify)",
                "pin": "\(usePIN)",
            ])
        let shouldCue = options.cue && !cued && (presence == true || verify)
        if shouldCue { cued = true }
        let clientDataHash = SystemRandom.bytes(32)
        let rpID = relyingPartyID
        let pendingFile = authPendingPath
        do throws(AuthenticatorError) {
            let response = try await Authenticator.withCeremony(on: key) { () throws(AuthenticatorError) in
                var verification = UserVerification.none
                if usePIN {
                    verification = .token(
                        try await key.pinToken(
                            permissions: .getAssertion, rpID: rpID, interaction: interaction, deadline: deadline))
                } else if verify {
                    verification = try await key.verifyUser(
                        permissions: .getAssertion, rpID: rpID, interaction: interaction, deadline: deadline)
                }
                defer { verification.wipe() }
                if shouldCue { await conversation.tell(options.cuePrompt ?? Self.defaultCue, isError: false) }
                var request = GetAssertionRequest(
                    rpID: rpID, clientDataHash: clientDataHash,
                    allowList: credential.credentialID.map { [PublicKeyCredentialDescriptor(id: $0)] },
                    options: CommandOptions(
                        userPresence: presence, userVerification: verification.token == nil && verify ? true : nil))
                let pending = AuthPendingFile(path: pendingFile)
                defer { pending.close() }
                do throws(CTAP2Error) {
                    if let token = verification.token { try request.authorize(with: token) }
                    return try await key.session.getAssertion(request, deadline: deadline)
                } catch {
                    throw AuthenticatorError(error, deviceURI: key.uri)
                }
            }
            try check(
                response.authData, signature: response.signature, clientDataHash: clientDataHash, coseKey: coseKey,
                presence: presence, verify: verify)
            logger.debug("assertion verified", metadata: ["device": "\(key.uri)"])
        } catch {
            if let left = interaction.refusedPIN {
                let attempts = left.map { $0 == 1 ? "1 attempt left" : "\($0) attempts left" } ?? "attempts left unknown"
                await conversation.tell("Wrong PIN for the security key (\(attempts)).", isError: true)
                throw PAMFailure(.authError, "Wrong PIN for the security key \(key.uri) (\(attempts)).")
            }
            throw Self.failure(error, deviceURI: key.uri)
        }
    }

    /// The checks pam-u2f's libfido2 makes of an assertion (fido_assert_verify): the RP ID hash,
    /// the flags asked for, and the signature over authenticatorData ‖ clientDataHash with the
    /// public key from the file.
    func check(
        _ authData: AuthenticatorData, signature: [UInt8], clientDataHash: [UInt8], coseKey: COSEKey, presence: Bool?,
        verify: Bool
    ) throws(AuthenticatorError) {
        let refuse = { (why: String) in AuthenticatorError(.unexpectedAnswer, why) }
        guard authData.rpIDHash == rpIDHash else {
            throw refuse("The assertion is for another relying party.")
        }
        if presence == true, !authData.flags.contains(.userPresent) {
            throw refuse("The assertion does not say the user touched the key.")
        }
        if verify, !authData.flags.contains(.userVerified) {
            throw refuse("The assertion does not say the user was verified.")
        }
        do throws(WebAuthnVerificationError) {
            try coseKey.verifySignature(signature, for: authData.bytes + clientDataHash)
        } catch {
            throw refuse("The assertion's signature does not verify with the listed public key.")
        }
    }

    /// One assertion on a key that speaks only CTAP1/U2F (CTAP 2.1 §10.3): U2F_AUTHENTICATE
    /// with the RP ID's hash as the application, converted to authenticator data and checked
    /// as a CTAP2 assertion. U2F verifies no user: a credential or line that asks for the PIN
    /// or user verification is refused, never weakened to a touch.
    func assertThroughU2F(
        _ credential: PAMCredential, on key: Authenticator, coseKey: COSEKey, conversation: any PAMConversation,
        cued: inout Bool, deadline: Deadline, logger: Logger
    ) async throws(PAMFailure) {
        guard !needsVerification(credential) else {
            var refusal = PAMFailure(
                .authError,
                "The security key \(key.uri) speaks only U2F, which cannot verify the user, and the credential "
                    + "listed for \(user.name) or the PAM line asks for the PIN or user verification.")
            refusal.isRefusal = true
            throw refusal
        }
        guard let keyHandle = credential.credentialID, (1...255).contains(keyHandle.count), coseKey.algorithm == .es256
        else {
            var failure = PAMFailure(
                .authError, "The security key \(key.uri) speaks only U2F, which cannot use a resident or non-es256 credential.")
            failure.keyLacksCredential = true
            throw failure
        }
        let presence = options.userPresence != .discouraged || credential.attributes.contains(.presence)
        logger.debug("asking for a U2F assertion", metadata: ["device": "\(key.uri)", "up": "\(presence)"])
        if options.cue, !cued, presence {
            cued = true
            await conversation.tell(options.cuePrompt ?? Self.defaultCue, isError: false)
        }
        let clientDataHash = SystemRandom.bytes(32)
        let application = rpIDHash
        let pending = AuthPendingFile(path: presence ? authPendingPath : nil)
        defer { pending.close() }
        do throws(AuthenticatorError) {
            let authData: AuthenticatorData
            let signature: [UInt8]
            do throws(CTAP2Error) {
                let response = try await key.session.u2fAuthenticate(
                    presence ? .enforceUserPresence : .dontEnforceUserPresence, challenge: clientDataHash,
                    application: application, keyHandle: keyHandle, deadline: deadline)
                authData = try response.authenticatorData(rpIDHash: application)
                signature = response.signature
            } catch {
                throw AuthenticatorError(error, deviceURI: key.uri)
            }
            try check(
                authData, signature: signature, clientDataHash: clientDataHash, coseKey: coseKey,
                presence: presence ? true : nil, verify: false)
            logger.debug("assertion verified", metadata: ["device": "\(key.uri)"])
        } catch {
            throw Self.failure(error, deviceURI: key.uri)
        }
    }

    /// The PAM result of a device-layer failure.
    static func failure(_ error: AuthenticatorError, deviceURI: String) -> PAMFailure {
        switch error.code {
        case .noDevice, .removed:
            return PAMFailure(.authInfoUnavailable, "The security key \(deviceURI) went away: \(error.message)")
        case AuthenticatorError.Code(rawValue: CTAP2Error.Code.noCredentials.rawValue):
            var failure = PAMFailure(.authError, "The security key \(deviceURI) does not hold the credential.")
            failure.keyLacksCredential = true
            return failure
        default:
            return PAMFailure(.authError, "The security key \(deviceURI) did not authenticate the user: \(error.message)")
        }
    }

    /// `authpending_file`: the line's, none when empty, else pam-u2f's default for this process's user.
    var authPendingPath: String? {
        guard let file = options.authPendingFile else { return "/var/run/user/\(getuid())/pam-u2f-authpending" }
        return file.isEmpty ? nil : file
    }
}

/// pam-u2f's touch notification: a file held open while a touch is awaited (created if missing,
/// never through a symbolic link), for tools that watch it with inotify.
struct AuthPendingFile {
    private let fd: Int32

    init(path: String?) {
        guard let path else {
            fd = -1
            return
        }
        fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0o664)
    }

    func close() {
        if fd >= 0 { _ = Glibc.close(fd) }
    }
}
