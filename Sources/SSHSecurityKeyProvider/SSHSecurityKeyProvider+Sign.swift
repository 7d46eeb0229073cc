import Authenticators
import CTAP2
import Crypto
import Transport

extension SSHSecurityKeyProvider {
    /// `sk_sign`: an assertion by the credential `keyHandle` of `application` over
    /// clientDataHash = SHA-256(`data`), with a touch when `flags` has
    /// `userPresenceRequired` and user verification when it has `userVerificationRequired`
    /// (the PIN given, or the key's built-in verification; neither is `pinRequired`).
    ///
    /// Without a `device` option the key is found as OpenSSH's provider finds it: silent
    /// probes for the credential on every key present; when verification is needed (which a
    /// silent probe cannot see past, credProtect hiding the credential), the only key present
    /// or the one touched.
    public func sign(
        algorithm: SSHKeyAlgorithm, data: [UInt8], application: String, keyHandle: [UInt8], flags: SSHKeyFlags,
        pin: String?, options: SSHProviderOptions
    ) async throws(SSHSecurityKeyError) -> SSHSignature {
        try await reportingFailures(pinGiven: pin != nil) { () throws(SSHSecurityKeyError) in
            guard algorithm.coseAlgorithm != nil else {
                throw SSHSecurityKeyError(.unsupported, "The key type \(algorithm) is not supported.")
            }
            guard !keyHandle.isEmpty, !application.isEmpty else {
                throw SSHSecurityKeyError(.general, "The SSH key has no key handle or application.")
            }
            let deadline = Deadline.after(timeout)
            let key: Authenticator
            if let device = options.device {
                key = try await open(device, deadline: deadline)
            } else if pin != nil || flags.contains(.userVerificationRequired) {
                key = try await chooseKey(device: nil, deadline: deadline)
            } else {
                key = try await findKey(holding: keyHandle, application: application, deadline: deadline)
            }
            logger.debug("signing", metadata: ["device": "\(key.uri)", "algorithm": "\(algorithm)"])
            let pinOnce = OneAttemptPIN(pin)
            return try await using(key, pin: pinOnce) { () throws(SSHSecurityKeyError) in
                var verification = UserVerification.none
                if pin != nil || flags.contains(.userVerificationRequired) {
                    verification = try await self.verification(
                        on: key, pin: pinOnce, permissions: .getAssertion, rpID: application, deadline: deadline)
                }
                defer { verification.wipe() }
                var request = GetAssertionRequest(
                    rpID: application, clientDataHash: Self.clientDataHash(data),
                    allowList: [PublicKeyCredentialDescriptor(id: keyHandle)],
                    options: CommandOptions(
                        userPresence: flags.contains(.userPresenceRequired),
                        userVerification: verification.isUVOption ? true : nil))
                let response: GetAssertionResponse
                do throws(CTAP2Error) {
                    if let token = verification.token { try request.authorize(with: token) }
                    response = try await key.session.getAssertion(request, deadline: deadline)
                } catch where error.code == .noCredentials {
                    throw SSHSecurityKeyError(
                        .deviceNotFound, "The security key \(key.uri) does not hold this SSH key.",
                        underlying: AuthenticatorError(error, deviceURI: key.uri))
                } catch {
                    throw SSHSecurityKeyError(error, deviceURI: key.uri)
                }
                return try Self.signature(response, algorithm: algorithm)
            }
        }
    }

    /// The assertion as OpenSSH's provider returns it: the flags byte and counter of the
    /// authenticator data, and the signature as r and s (ECDSA, from DER, without leading
    /// zeros) or whole in r (Ed25519, 64 bytes).
    static func signature(_ response: GetAssertionResponse, algorithm: SSHKeyAlgorithm)
        throws(SSHSecurityKeyError) -> SSHSignature
    {
        var signature = SSHSignature(
            flags: response.authData.flags.rawValue, counter: response.authData.signCount, r: [], s: [])
        switch algorithm {
        case .ecdsaP256:
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: response.signature) else {
                throw SSHSecurityKeyError(.general, "The security key's ECDSA signature is not valid DER.")
            }
            let raw = Array(parsed.rawRepresentation)
            guard raw.count == 64 else {
                throw SSHSecurityKeyError(.general, "The security key's ECDSA signature has the wrong size.")
            }
            signature.r = Array(raw[0..<32].drop(while: { $0 == 0 }))
            signature.s = Array(raw[32..<64].drop(while: { $0 == 0 }))
        case .ed25519:
            guard response.signature.count == 64 else {
                throw SSHSecurityKeyError(
                    .general, "The security key's Ed25519 signature is \(response.signature.count) bytes, not 64.")
            }
            signature.r = response.signature
        default:
            throw SSHSecurityKeyError(.unsupported, "The key type \(algorithm) is not supported.")
        }
        return signature
    }
}
