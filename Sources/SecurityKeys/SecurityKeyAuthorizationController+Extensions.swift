import Authenticators
import CBOR
import CTAP2
import Crypto
import Transport

/// What a registration's extensions sent, kept to read the outputs with.
struct RegistrationExtensions: Sendable {
    /// The authenticator extension inputs to send.
    var inputs = MakeCredentialExtensionInputs()
    /// The key agreement hmac-secret-mc's salts were encrypted with.
    var sharedSecret: PINUVSharedSecret?

    /// Wipes the shared secret.
    func wipe() { sharedSecret?.wipe() }
}

/// What an assertion's extensions sent, kept to read the outputs with.
struct AssertionExtensions: Sendable {
    /// The authenticator extension inputs to send.
    var inputs = GetAssertionExtensionInputs()
    /// The key agreement hmac-secret's salts were encrypted with.
    var sharedSecret: PINUVSharedSecret?

    /// Wipes the shared secret.
    func wipe() { sharedSecret?.wipe() }
}

extension SecurityKeyAuthorizationController {
    // MARK: Registration

    /// Turns the request's extension inputs into the authenticator's (CTAP 2.2 §12 client
    /// processing): inputs the key does not list are left out (their outputs then say so),
    /// except an enforced credProtect, which fails here, before anything is created.
    func registrationExtensions(
        _ request: SecurityKeyCredentialRegistrationRequest, key: ProviderKey, deadline: Deadline
    ) async throws(SecurityKeyError) -> RegistrationExtensions {
        let info = key.info
        var plan = RegistrationExtensions()
        plan.inputs.additionalExtensionInputs = request.additionalExtensionInputs
        if let protection = request.credentialProtection {
            guard let level = protection.policy.level else {
                throw SecurityKeyError(
                    .invalidRequest, "Unknown credential protection policy \"\(protection.policy.rawValue)\".")
            }
            if protection.isEnforced {
                do throws(CTAP2Error) { try level.checkEnforceable(on: info) } catch {
                    throw SecurityKeyError(.notHandled, error.message, underlying: error)
                }
            }
            if info.extensions.contains(.credProtect) { plan.inputs.credProtect = level }
        }
        if let blob = request.credentialBlob, info.extensions.contains(.credBlob) {
            // CTAP 2.2 §12.2: a key that lists credBlob stores at least 32 bytes.
            let maximum = Int(clamping: info.maxCredBlobLength ?? 32)
            guard blob.count <= maximum else {
                throw SecurityKeyError(
                    .invalidRequest,
                    "The credential blob is \(blob.count) bytes; this security key stores at most \(maximum).")
            }
            plan.inputs.credBlob = blob
        }
        if request.minimumPINLength, info.extensions.contains(.minPINLength) { plan.inputs.minPINLength = true }
        if request.thirdPartyPayment, info.extensions.contains(.thirdPartyPayment) {
            plan.inputs.thirdPartyPayment = true
        }
        let wantsSecret = request.prf != nil || request.hmacCreateSecret
        if wantsSecret, info.extensions.contains(.hmacSecret) {
            plan.inputs.hmacSecret = true
            if let values = request.prf?.inputValues, info.extensions.contains(.hmacSecretMakeCredential) {
                let salts = values.salts
                let secret = try await sharedSecret(key: key, deadline: deadline)
                plan.sharedSecret = secret
                do throws(CTAP2Error) {
                    plan.inputs.hmacSecretMakeCredential = try HMACSecretInput(
                        salt1: salts.salt1, salt2: salts.salt2, sharedSecret: secret)
                } catch {
                    secret.wipe()
                    throw SecurityKeyError(error)
                }
            }
        }
        return plan
    }

    /// Fills the registration's extension outputs from the key's reply.
    func applyRegistrationOutputs(
        to registration: inout SecurityKeyCredentialRegistration,
        request: SecurityKeyCredentialRegistrationRequest, plan: RegistrationExtensions,
        response: MakeCredentialResponse, residentKey: Bool
    ) throws(SecurityKeyError) {
        let outputs: AuthenticatorExtensionOutputs
        do throws(CTAP2Error) { outputs = try response.authData.extensionOutputs() } catch {
            throw SecurityKeyError(error)
        }
        registration.authenticatorExtensionOutputs = outputs
        if let prf = request.prf {
            var output = SecurityKeyPRFRegistrationOutput(isSupported: outputs.hmacSecretCreated == true)
            if let encrypted = outputs.hmacSecretMakeCredentialEncrypted,
                let input = plan.inputs.hmacSecretMakeCredential, let secret = plan.sharedSecret,
                prf.inputValues != nil
            {
                var decrypted = try Self.decrypt(encrypted, input: input, secret: secret)
                defer { decrypted.wipe() }
                output.first = SymmetricKey(data: decrypted.output1)
                output.second = decrypted.output2.map { SymmetricKey(data: $0) }
            }
            registration.prf = output
        }
        if request.hmacCreateSecret { registration.hmacCreateSecret = outputs.hmacSecretCreated == true }
        if request.credentialProperties {
            // WebAuthn L3 §10.1.3: rk is the requireResidentKey the makeCredential was sent with;
            // the command succeeded, so a requested discoverable credential was created.
            registration.credentialProperties = SecurityKeyCredentialProperties(residentKey: residentKey)
        }
        if request.credentialBlob != nil { registration.credentialBlobStored = outputs.credBlobStored == true }
        if request.appIDExclude != nil { registration.appIDExclude = true }
    }

    // MARK: Assertion

    /// Checks the PRF input against the allowed credentials (WebAuthn L3 §10.1.4): per-credential
    /// values need an allow list and may only name credentials on it.
    static func validatePRF(_ request: SecurityKeyCredentialAssertionRequest) throws(SecurityKeyError) {
        if request.prf != nil, request.hmacGetSecret != nil {
            throw SecurityKeyError(.invalidRequest, "Give PRF values or raw hmac-secret salts, not both.")
        }
        if let salts = request.hmacGetSecret {
            guard salts.salt1.count == 32, salts.salt2.map({ $0.count == 32 }) ?? true else {
                throw SecurityKeyError(.invalidRequest, "hmac-secret salts must be 32 bytes each.")
            }
        }
        guard let byCredential = request.prf?.perCredentialInputValues, !byCredential.isEmpty else { return }
        guard !request.allowedCredentials.isEmpty else {
            throw SecurityKeyError(
                .invalidRequest, "PRF values by credential need a list of allowed credentials.")
        }
        let allowed = Set(request.allowedCredentials.map(\.credentialID))
        guard byCredential.keys.allSatisfy(allowed.contains) else {
            throw SecurityKeyError(
                .invalidRequest, "PRF values by credential name a credential that is not allowed.")
        }
    }

    /// The authenticator extension inputs of a sign-in with `credentialID` (nil: a discoverable
    /// credential, not known yet).
    func assertionExtensions(
        _ request: SecurityKeyCredentialAssertionRequest, credentialID: [UInt8]?, key: ProviderKey,
        deadline: Deadline
    ) async throws(SecurityKeyError) -> AssertionExtensions {
        let info = key.info
        var plan = AssertionExtensions()
        plan.inputs.additionalExtensionInputs = request.additionalExtensionInputs
        if request.getCredentialBlob, info.extensions.contains(.credBlob) { plan.inputs.credBlob = true }
        var salts: (salt1: [UInt8], salt2: [UInt8]?)?
        if let prf = request.prf {
            let values = credentialID.flatMap { prf.perCredentialInputValues?[$0] } ?? prf.inputValues
            salts = values?.salts
        } else if let raw = request.hmacGetSecret {
            salts = (raw.salt1, raw.salt2)
        }
        if let salts, info.extensions.contains(.hmacSecret) {
            let secret = try await sharedSecret(key: key, deadline: deadline)
            plan.sharedSecret = secret
            do throws(CTAP2Error) {
                plan.inputs.hmacSecret = try HMACSecretInput(
                    salt1: salts.salt1, salt2: salts.salt2, sharedSecret: secret)
            } catch {
                secret.wipe()
                throw SecurityKeyError(error)
            }
        }
        return plan
    }

    /// Fills the assertion's extension outputs from the chosen reply.
    func applyAssertionOutputs(
        to assertion: inout SecurityKeyCredentialAssertion, request: SecurityKeyCredentialAssertionRequest,
        plan: AssertionExtensions, response: GetAssertionResponse
    ) throws(SecurityKeyError) {
        let outputs: AuthenticatorExtensionOutputs
        do throws(CTAP2Error) { outputs = try response.authData.extensionOutputs() } catch {
            throw SecurityKeyError(error)
        }
        if plan.inputs.credBlob { assertion.credentialBlob = outputs.credBlob ?? [] }
        guard let input = plan.inputs.hmacSecret, let secret = plan.sharedSecret,
            let encrypted = outputs.hmacSecretEncrypted
        else { return }
        var decrypted = try Self.decrypt(encrypted, input: input, secret: secret)
        defer { decrypted.wipe() }
        let first = SymmetricKey(data: decrypted.output1)
        let second = decrypted.output2.map { SymmetricKey(data: $0) }
        if request.prf != nil {
            assertion.prf = SecurityKeyPRFAssertionOutput(first: first, second: second)
        } else {
            assertion.hmacGetSecret = SecurityKeyHMACSecretOutput(output1: first, output2: second)
        }
    }

    // MARK: Shared

    /// A fresh key agreement for hmac-secret (getKeyAgreement: costs no PIN or UV attempt and
    /// needs no PIN to be set), asked for after any PIN/UV token, which may renew the key's
    /// key-agreement key on older keys.
    func sharedSecret(key: ProviderKey, deadline: Deadline) async throws(SecurityKeyError) -> PINUVSharedSecret {
        // Held from here to the end of the ceremony: another application's wrong PIN would make
        // the key regenerate its key-agreement key, and the salts sent with this one fail.
        do throws(AuthenticatorError) { try await key.authenticator.holdForCeremony(deadline: deadline) } catch {
            throw SecurityKeyError(error)
        }
        do throws(CTAP2Error) {
            let clientPIN = try ClientPIN(session: key.session, info: key.info, logger: logger)
            return try await clientPIN.sharedSecret(deadline: deadline)
        } catch {
            throw SecurityKeyError(error)
        }
    }

    static func decrypt(
        _ encrypted: [UInt8], input: HMACSecretInput, secret: PINUVSharedSecret
    ) throws(SecurityKeyError) -> HMACSecretOutput {
        do throws(CTAP2Error) {
            return try HMACSecretOutput(encrypted: encrypted, input: input, sharedSecret: secret)
        } catch {
            throw SecurityKeyError(error)
        }
    }
}
