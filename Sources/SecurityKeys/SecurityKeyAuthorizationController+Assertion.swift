import Authenticators
import CTAP2
import Transport

extension SecurityKeyAuthorizationController {
    /// The most accounts a discoverable sign-in reads from one key (hostile keys may claim more).
    static let maximumAccounts = 256

    /// Signs in with an existing credential (WebAuthn L3 §5.1.4 for a roaming authenticator;
    /// CTAP 2.2 §6.2).
    /// - Parameter request: the relying party's sign-in request.
    /// - Parameter deadline: when the request must be done (default: its `timeout` from now); a
    ///   caller that already spent part of the time (opening the key) passes the deadline it made.
    public func performAssertion(
        _ request: SecurityKeyCredentialAssertionRequest, deadline: Deadline? = nil
    )
        async throws(SecurityKeyError)
        -> SecurityKeyCredentialAssertion
    {
        let deadline = deadline ?? .after(request.timeout)
        let clientData = try request.clientData.resolve(
            ceremony: .get, challenge: request.challenge,
            relyingPartyIdentifier: request.relyingPartyIdentifier,
            publicSuffixes: publicSuffixes)
        try Self.validatePRF(request)
        var request = request
        if let appID = request.appID, case .origin(let origin, _, _) = request.clientData, let publicSuffixes {
            request.appID = try FIDOAppID.authorize(appID, origin: origin, publicSuffixes: publicSuffixes)
        }
        var assertion = try await withSelectedKey(deadline: deadline) { (key) throws(SecurityKeyError) in
            // One ceremony: from the token (or hmac-secret key agreement) to the getAssertion
            // and large-blob write that use it, the key is held for this process.
            try await Authenticator.withCeremony(on: key.authenticator) { () throws(SecurityKeyError) in
                try await signIn(request, clientData: clientData, key: key, deadline: deadline)
            }
        }
        assertion.appIDRequested = request.appID != nil
        return assertion
    }

    private func signIn(
        _ request: SecurityKeyCredentialAssertionRequest, clientData: (json: [UInt8]?, hash: [UInt8]),
        key: ProviderKey, deadline: Deadline
    ) async throws(SecurityKeyError) -> SecurityKeyCredentialAssertion {
        if key.info.isU2FOnly {
            return try await signInThroughU2F(request, clientData: clientData, key: key, deadline: deadline)
        }
        var rpID = request.relyingPartyIdentifier
        try Self.validateLargeBlob(request)
        // Writing a large blob takes a token with the lbw permission (CTAP 2.1 §6.10.2).
        let writesLargeBlob: Bool
        if case .write = request.largeBlob, Self.supportsLargeBlobs(key.info) {
            writesLargeBlob = true
        } else {
            writesLargeBlob = false
        }
        let plan = try await userVerification(
            key: key, preference: request.userVerificationPreference, keyDemandsIt: writesLargeBlob,
            permissions: writesLargeBlob ? [.getAssertion, .largeBlobWrite] : [.getAssertion], rpID: rpID,
            deadline: deadline)
        defer { plan.token?.wipe() }

        var allowList: [PublicKeyCredentialDescriptor]?
        var usedAppID = false
        if !request.allowedCredentials.isEmpty {
            var found = try await key.preflight(
                rpID: rpID, credentials: request.allowedCredentials, clientDataHash: clientData.hash,
                token: plan.token, deadline: deadline)
            if found == nil, let appID = request.appID, appID != rpID {
                found = try await key.preflight(
                    rpID: appID, credentials: request.allowedCredentials, clientDataHash: clientData.hash,
                    token: nil, deadline: deadline)
                if found != nil {
                    rpID = appID
                    usedAppID = true
                }
            }
            guard let found else {
                throw SecurityKeyError(
                    .noCredentials, "This security key holds none of the credentials this site accepts.")
            }
            allowList = [PublicKeyCredentialDescriptor(id: found.credentialID)]
        }

        var extensions = try await assertionExtensions(
            request, credentialID: allowList?.first?.id, key: key, deadline: deadline)
        defer { extensions.wipe() }
        extensions.inputs.largeBlobKey = request.largeBlob != nil && Self.supportsLargeBlobs(key.info)
        var getAssertion = GetAssertionRequest(
            rpID: rpID, clientDataHash: clientData.hash, allowList: allowList,
            extensions: extensions.inputs.isEmpty ? nil : extensions.inputs.cbor,
            options: plan.uvOption ? CommandOptions(userVerification: true) : nil)
        var responses: [GetAssertionResponse] = []
        do throws(CTAP2Error) {
            if let token = plan.token, !usedAppID { try getAssertion.authorize(with: token) }
            let first = try await key.session.getAssertion(
                getAssertion, deadline: deadline, keepalive: touchObserver(key))
            responses.append(first)
            let count = allowList == nil ? Int(clamping: first.numberOfCredentials ?? 1) : 1
            guard count <= Self.maximumAccounts else {
                throw CTAP2Error(
                    .malformedResponse, "The security key claims \(count) accounts for one site.")
            }
            while responses.count < count {
                responses.append(try await key.session.getNextAssertion(deadline: deadline))
            }
        } catch {
            throw SecurityKeyError(error)
        }

        var chosen = responses[0]
        if responses.count > 1 {
            // The user may take a while to choose: let other applications at the key meanwhile,
            // unless a large-blob write still needs this ceremony's token afterwards (then the
            // hold stays, or another application's getPinToken could void the token).
            if !writesLargeBlob { await Authenticator.releaseCeremonyHoldForPrompt() }
            emit(.selectingAccount(count: responses.count))
            guard let interaction else {
                throw SecurityKeyError(
                    .notInteractive,
                    "Several accounts are stored for this site, and this request cannot ask which one.")
            }
            let accounts = responses.map {
                SecurityKeyAccount(
                    userID: $0.user?.id ?? [], name: $0.user?.name, displayName: $0.user?.displayName,
                    credentialID: $0.credential?.id ?? [])
            }
            guard let index = await interaction.chooseAccount(accounts) else {
                throw SecurityKeyError(.cancelled, "The account choice was cancelled.")
            }
            guard responses.indices.contains(index) else {
                throw SecurityKeyError(
                    .invalidRequest, "The account chosen (\(index)) is not one of those offered.")
            }
            chosen = responses[index]
        }
        guard let credentialID = chosen.credential?.id ?? allowList?.first?.id else {
            throw SecurityKeyError(.invalidResponse, "The security key's assertion names no credential.")
        }
        var assertion = SecurityKeyCredentialAssertion(
            credentialID: credentialID, authenticatorData: chosen.authData, signature: chosen.signature,
            userID: chosen.user?.id, clientData: clientData, appID: usedAppID, deviceURI: key.uri)
        try applyAssertionOutputs(to: &assertion, request: request, plan: extensions, response: chosen)
        if let input = request.largeBlob {
            assertion.largeBlob = await performLargeBlob(
                input, response: chosen, key: key, token: plan.token, deadline: deadline)
        }
        return assertion
    }
}
