import Authenticators
import CBOR
import CTAP2
import Transport

extension SSHSecurityKeyProvider {
    /// `sk_enroll`: a new credential for `application` (OpenSSH's `ssh:` RP ID), with
    /// clientDataHash = SHA-256(`challenge`) and user ID = the `user` option NUL-padded to 32
    /// bytes, user name and display name "openssh".
    ///
    /// A resident key gets credProtect level 2 (level 3 with `userVerificationRequired`), and so
    /// does a verify-required key; a key without credProtect refuses both
    /// (``SSHSecurityKeyError/Code/unsupported``). Unless `force` is set, an existing resident
    /// key of the same application and user is ``SSHSecurityKeyError/Code/credentialExists``.
    public func enroll(
        algorithm: SSHKeyAlgorithm, challenge: [UInt8], application: String, flags: SSHKeyFlags, pin: String?,
        options: SSHProviderOptions
    ) async throws(SSHSecurityKeyError) -> SSHEnrollment {
        try await reportingFailures(pinGiven: pin != nil) { () throws(SSHSecurityKeyError) in
            guard let coseAlgorithm = algorithm.coseAlgorithm else {
                throw SSHSecurityKeyError(.unsupported, "The key type \(algorithm) is not supported.")
            }
            guard !application.isEmpty else { throw SSHSecurityKeyError(.general, "The application is empty.") }
            let deadline = Deadline.after(timeout)
            let key = try await chooseKey(device: options.device, deadline: deadline)
            logger.debug("enrolling", metadata: ["device": "\(key.uri)", "algorithm": "\(algorithm)"])
            let pinOnce = OneAttemptPIN(pin)
            return try await using(key, pin: pinOnce) { () throws(SSHSecurityKeyError) in
                try await enroll(
                    on: key, algorithm: algorithm, coseAlgorithm: coseAlgorithm, challenge: challenge,
                    application: application, flags: flags, pin: pinOnce, userID: options.userID, deadline: deadline)
            }
        }
    }

    private func enroll(
        on key: Authenticator, algorithm: SSHKeyAlgorithm, coseAlgorithm: COSEAlgorithm, challenge: [UInt8],
        application: String, flags: SSHKeyFlags, pin: OneAttemptPIN, userID: [UInt8], deadline: Deadline
    ) async throws(SSHSecurityKeyError) -> SSHEnrollment {
        let info = await key.info
        if info.isU2FOnly {
            throw SSHSecurityKeyError(.unsupported, "The security key speaks only U2F (CTAP1).")
        }
        let offered = info.algorithms.map(\.algorithm)
        guard offered.isEmpty || offered.contains(coseAlgorithm) else {
            throw SSHSecurityKeyError(.unsupported, "The security key does not support \(algorithm) keys.")
        }
        let resident = flags.contains(.residentKey)
        var extensions = MakeCredentialExtensionInputs()
        if resident || flags.contains(.userVerificationRequired) {
            guard info.extensions.contains(.credProtect) else {
                throw SSHSecurityKeyError(
                    .unsupported,
                    "The security key cannot protect credentials (no credProtect), which resident and verify-required keys need."
                )
            }
            extensions.credProtect =
                flags.contains(.userVerificationRequired)
                ? .userVerificationRequired : .userVerificationOptionalWithCredentialIDList
        }
        // Verification: with the PIN given, one token for the lookup and the creation; without,
        // none, unless the key would refuse the creation without it (a resident key, or a key
        // with a PIN and no makeCredUvNotRqd), which is pinRequired before anyone touches it.
        let pinSet = info.options.isEnabled(.clientPIN)
        let keyDemandsIt = pinSet && (resident || !info.options.isEnabled(.makeCredentialUVNotRequired))
        var verification = UserVerification.none
        if pin.isGiven || keyDemandsIt {
            verification = try await self.verification(
                on: key, pin: pin, permissions: [.makeCredential, .getAssertion], rpID: application,
                deadline: deadline)
        }
        defer { verification.wipe() }
        if resident && !flags.contains(.force) {
            try await refuseExisting(
                on: key, application: application, userID: userID, verification: verification, deadline: deadline)
        }
        var request = MakeCredentialRequest(
            clientDataHash: Self.clientDataHash(challenge), rp: RelyingPartyEntity(id: application),
            user: UserEntity(id: userID, name: "openssh", displayName: "openssh"),
            pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: coseAlgorithm)],
            extensions: extensions.isEmpty ? nil : extensions.cbor,
            options: CommandOptions(
                residentKey: resident ? true : nil,
                userVerification: verification.isUVOption ? true : nil))
        let response: MakeCredentialResponse
        do throws(CTAP2Error) {
            if let token = verification.token { try request.authorize(with: token) }
            response = try await key.session.makeCredential(request, deadline: deadline)
        } catch {
            throw SSHSecurityKeyError(error, deviceURI: key.uri)
        }
        return try Self.enrollment(response, algorithm: algorithm, flags: flags)
    }

    /// Refuses to overwrite a resident key: a silent discoverable assertion for `application`
    /// and a look for `userID` among the accounts it returns.
    private func refuseExisting(
        on key: Authenticator, application: String, userID: [UInt8], verification: UserVerification,
        deadline: Deadline
    ) async throws(SSHSecurityKeyError) {
        var lookup = GetAssertionRequest(
            rpID: application, clientDataHash: [UInt8](repeating: 0, count: 32),
            options: CommandOptions(userPresence: false, userVerification: verification.isUVOption ? true : nil))
        let exists: Bool
        do throws(CTAP2Error) {
            if let token = verification.token { try lookup.authorize(with: token) }
            var response = try await key.session.getAssertion(lookup, deadline: deadline)
            // A hostile key may claim any count: the walk is bounded.
            let count = min(Int(clamping: response.numberOfCredentials ?? 1), 1024)
            var found = response.user?.id == userID
            for _ in 1..<max(count, 1) where !found {
                response = try await key.session.getNextAssertion(deadline: deadline)
                found = response.user?.id == userID
            }
            exists = found
        } catch where error.code == .noCredentials {
            return
        } catch {
            throw SSHSecurityKeyError(error, deviceURI: key.uri)
        }
        if exists {
            throw SSHSecurityKeyError(
                .credentialExists, "A resident key for \(application) and this user exists on the security key.")
        }
    }

    /// The enrolment response as OpenSSH's provider fills it: the public key in SSH's form,
    /// the credential ID as key handle, the attestation signature and first certificate, and
    /// the authenticator data as the CBOR byte string it travelled in.
    static func enrollment(
        _ response: MakeCredentialResponse, algorithm: SSHKeyAlgorithm, flags: SSHKeyFlags
    ) throws(SSHSecurityKeyError) -> SSHEnrollment {
        guard let credential = response.authData.attestedCredentialData else {
            throw SSHSecurityKeyError(.general, "The security key's reply carries no new credential.")
        }
        let publicKey = try sshPublicKey(credential.credentialPublicKey, algorithm: algorithm)
        let statement = response.attestationStatement
        return SSHEnrollment(
            flags: flags, publicKey: publicKey, keyHandle: credential.credentialID,
            signature: statement["sig"]?.bytesValue ?? [],
            attestationCertificate: statement["x5c"]?.arrayValue?.first?.bytesValue ?? [],
            authenticatorData: CBOREncoder.encode(.byteString(response.authData.bytes)))
    }

    /// A COSE public key as OpenSSH keeps it: the uncompressed P-256 point (65 bytes) or the
    /// raw Ed25519 key (32 bytes), checked to be a valid key of the algorithm asked for.
    static func sshPublicKey(_ key: COSEKey, algorithm: SSHKeyAlgorithm) throws(SSHSecurityKeyError) -> [UInt8] {
        let parsed: SignaturePublicKey
        do throws(CTAP2Error) { parsed = try key.publicKey() } catch {
            throw SSHSecurityKeyError(.general, "The security key returned an unusable public key: \(error.message)")
        }
        switch (parsed, algorithm) {
        case (.p256(let p256), .ecdsaP256): return Array(p256.x963Representation)
        case (.ed25519(let ed25519), .ed25519): return Array(ed25519.rawRepresentation)
        default:
            throw SSHSecurityKeyError(
                .general, "The security key returned a \(parsed.kindName) key for a \(algorithm) request.")
        }
    }

    /// Runs `body`, telling the user in one sentence why it failed, except where OpenSSH
    /// speaks for itself: a PIN it has not asked for yet, and an existing resident key.
    func reportingFailures<T>(
        pinGiven: Bool, _ body: () async throws(SSHSecurityKeyError) -> T
    ) async throws(SSHSecurityKeyError) -> T {
        do throws(SSHSecurityKeyError) {
            return try await body()
        } catch {
            let openSSHAsks = error.code == .pinRequired && !pinGiven
            if !openSSHAsks && error.code != .credentialExists { report(error.message) }
            throw error
        }
    }
}

extension UserVerification {
    /// Whether the command carries the `uv` option rather than a token.
    var isUVOption: Bool {
        if case .uvOption = self { return true }
        return false
    }
}
