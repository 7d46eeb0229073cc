import Authenticators
import CBOR
import CTAP2
import Transport

extension SecurityKeyAuthorizationController {
    /// Registers a new credential (WebAuthn L3 §5.1.3 for a roaming authenticator; CTAP 2.2 §6.1).
    /// - Parameter request: the relying party's registration request.
    /// - Parameter deadline: when the request must be done (default: its `timeout` from now); a
    ///   caller that already spent part of the time (opening the key) passes the deadline it made.
    public func performRegistration(
        _ request: SecurityKeyCredentialRegistrationRequest, deadline: Deadline? = nil
    )
        async throws(SecurityKeyError)
        -> SecurityKeyCredentialRegistration
    {
        let deadline = deadline ?? .after(request.timeout)
        let clientData = try request.clientData.resolve(
            ceremony: .create, challenge: request.challenge,
            relyingPartyIdentifier: request.relyingPartyIdentifier,
            publicSuffixes: publicSuffixes)
        guard !request.userID.isEmpty, request.userID.count <= 64 else {
            throw SecurityKeyError(
                .invalidRequest, "The user ID must be 1 to 64 bytes, not \(request.userID.count).")
        }
        guard !request.credentialParameters.isEmpty else {
            throw SecurityKeyError(.invalidRequest, "At least one credential algorithm must be offered.")
        }
        return try await withSelectedKey(deadline: deadline) { (key) throws(SecurityKeyError) in
            // One ceremony: from the token (or hmac-secret key agreement) to the makeCredential
            // that uses it, the key is held for this process (Authenticators' withCeremony).
            try await Authenticator.withCeremony(on: key.authenticator) { () throws(SecurityKeyError) in
                try await register(request, clientData: clientData, key: key, deadline: deadline)
            }
        }
    }

    private func register(
        _ request: SecurityKeyCredentialRegistrationRequest, clientData: (json: [UInt8]?, hash: [UInt8]),
        key: ProviderKey, deadline: Deadline
    ) async throws(SecurityKeyError) -> SecurityKeyCredentialRegistration {
        if key.info.isU2FOnly {
            return try await registerThroughU2F(request, clientData: clientData, key: key, deadline: deadline)
        }
        let info = key.info
        try Self.checkAlgorithms(request, info: info)
        let rpID = request.relyingPartyIdentifier
        let canStore = info.options[.residentKey] == true
        let residentKey: Bool
        switch request.residentKeyPreference {
        case .required:
            guard canStore else {
                throw SecurityKeyError(
                    .notHandled, "This security key cannot store discoverable credentials.")
            }
            residentKey = true
        case .preferred: residentKey = canStore
        default: residentKey = false
        }
        // A key with a PIN refuses makeCredential without verification unless it offers
        // makeCredUvNotRqd for non-discoverable credentials (CTAP 2.1 §6.1.2 steps 7-8).
        // A largeBlob that must be supported fails here, before the user is asked anything.
        let wantsLargeBlobKey = try Self.largeBlobKeyWanted(request, info: info, residentKey: residentKey)
        let keyDemandsIt = residentKey || !info.isEnabled(.makeCredentialUVNotRequired)
        let plan = try await userVerification(
            key: key, preference: request.userVerificationPreference, keyDemandsIt: keyDemandsIt,
            permissions: [.makeCredential, .getAssertion], rpID: rpID, deadline: deadline)
        defer { plan.token?.wipe() }

        let excluded = try await key.preflight(
            rpID: rpID, credentials: request.excludedCredentials, clientDataHash: clientData.hash,
            token: plan.token,
            deadline: deadline)
        if excluded == nil, let appID = request.appIDExclude {
            try await excludeAppIDCredentials(request, appID: appID, clientDataHash: clientData.hash, key: key, deadline: deadline)
        }
        var extensions = try await registrationExtensions(request, key: key, deadline: deadline)
        defer { extensions.wipe() }
        extensions.inputs.largeBlobKey = wantsLargeBlobKey

        var makeCredential = MakeCredentialRequest(
            clientDataHash: clientData.hash,
            rp: RelyingPartyEntity(id: rpID, name: request.relyingPartyName ?? rpID),
            user: UserEntity(id: request.userID, name: request.name, displayName: request.displayName),
            pubKeyCredParams: request.credentialParameters.map {
                PublicKeyCredentialParameters(algorithm: CTAP2.COSEAlgorithm(rawValue: $0.rawValue))
            },
            excludeList: excluded.map { [PublicKeyCredentialDescriptor(id: $0.credentialID)] },
            extensions: extensions.inputs.isEmpty ? nil : extensions.inputs.cbor,
            options: CommandOptions(
                residentKey: residentKey ? true : nil, userVerification: plan.uvOption ? true : nil),
            enterpriseAttestation: request.attestationPreference == .enterprise && info.isEnabled(.enterpriseAttestation)
                ? 1 : nil,
            attestationFormatsPreference: Self.attestationFormatsPreference(request, info: info))
        let response: MakeCredentialResponse
        do throws(CTAP2Error) {
            if let token = plan.token { try makeCredential.authorize(with: token) }
            response = try await key.session.makeCredential(
                makeCredential, deadline: deadline, keepalive: touchObserver(key))
        } catch {
            throw SecurityKeyError(error)
        }
        if excluded != nil {
            throw SecurityKeyError(
                .matchedExcludedCredential, "This security key is already registered for this account.")
        }
        guard let credential = response.authData.attestedCredentialData else {
            throw SecurityKeyError(.invalidResponse, "The security key's reply carries no new credential.")
        }
        let attestation =
            request.attestationPreference == .none
            ? try Self.anonymized(response.attestationObject) : response.attestationObject
        var registration = SecurityKeyCredentialRegistration(
            attestationObject: attestation, credentialID: credential.credentialID, clientData: clientData,
            transports: key.transports, deviceURI: key.uri)
        try applyRegistrationOutputs(
            to: &registration, request: request, plan: extensions, response: response, residentKey: residentKey)
        if request.largeBlob != nil {
            registration.largeBlob = SecurityKeyLargeBlobRegistrationOutput(isSupported: response.largeBlobKey != nil)
        }
        return registration
    }

    /// The attestationFormatsPreference to send (CTAP 2.2 §6.1.1): the relying party's
    /// formats, only to a key that lists getInfo attestationFormats (older keys may refuse an
    /// unknown parameter), at most 16 of them.
    static func attestationFormatsPreference(
        _ request: SecurityKeyCredentialRegistrationRequest, info: AuthenticatorInfo
    ) -> [String]? {
        guard info.attestationFormats != nil, !request.attestationFormats.isEmpty else { return nil }
        return Array(request.attestationFormats.prefix(16))
    }

    /// Refuses a request none of whose algorithms the key lists in getInfo (CTAP 2.2 §6.4
    /// `algorithms`), before the user is asked for a PIN or a touch: the key would refuse the
    /// makeCredential anyway, after the PIN had been typed. Keys that list no algorithms
    /// (CTAP 2.0 may omit the member) are left to answer for themselves.
    static func checkAlgorithms(
        _ request: SecurityKeyCredentialRegistrationRequest, info: AuthenticatorInfo
    ) throws(SecurityKeyError) {
        let offered = info.algorithms.filter { $0.type == "public-key" }.map(\.algorithm.rawValue)
        guard !offered.isEmpty else { return }
        let wanted = request.credentialParameters.map(\.rawValue)
        guard !wanted.contains(where: offered.contains) else { return }
        let names = offered.map { CTAP2.COSEAlgorithm(rawValue: $0).description }.joined(separator: ", ")
        let message = "The security key supports none of the requested algorithms (it offers \(names))."
        throw SecurityKeyError(
            .notHandled, message, underlying: CTAP2Error(.unsupportedAlgorithm, message))
    }

    /// The `appidExclude` extension (WebAuthn L3 §10.1.2) over CTAP2: a silent check of the
    /// excluded credentials under the AppID's hash; a match waits for the user's touch (so
    /// that a site cannot probe for keys silently) and fails as an excluded credential would.
    private func excludeAppIDCredentials(
        _ request: SecurityKeyCredentialRegistrationRequest, appID: String, clientDataHash: [UInt8],
        key: ProviderKey, deadline: Deadline
    ) async throws(SecurityKeyError) {
        guard !request.excludedCredentials.isEmpty, appID != request.relyingPartyIdentifier else { return }
        let found = try await key.preflight(
            rpID: appID, credentials: request.excludedCredentials, clientDataHash: clientDataHash, token: nil,
            deadline: deadline)
        guard found != nil else { return }
        do throws(AuthenticatorError) {
            try await key.authenticator.waitForTouch(deadline: deadline, interaction: providerInteraction)
        } catch {
            throw SecurityKeyError(error)
        }
        throw SecurityKeyError(
            .matchedExcludedCredential, "This security key is already registered for this account (under its AppID).")
    }

    /// The attestation object with attestation removed as WebAuthn L3 §5.1.3 step 21 describes
    /// for `none`: format `none`, an empty statement, and a zero AAGUID.
    static func anonymized(_ object: AttestationObject) throws(SecurityKeyError) -> AttestationObject {
        // Replaced in the parsed value, which keeps its bytes in step: nothing is parsed again.
        guard let authData = object.authData.replacingAAGUID(with: .zero) else {
            throw SecurityKeyError(
                .invalidResponse, "The security key's authenticator data lacks the new credential.")
        }
        return AttestationObject(format: .none, authData: authData, attestationStatement: CBORMap())
    }
}
