import CTAP2
import Crypto
import SecurityKeys
import Transport

/// Registration and authentication on CTAP2Session + ClientPIN + CollectedClientData, the way a
/// WebAuthn client does them (WebAuthn L3 §5.1.3, §5.1.4.1). Kept in one place so that the
/// commands can move to the SecurityKeys provider API without changing their output.
struct WebAuthnCeremony {
    let session: CTAP2Session
    let info: AuthenticatorInfo
    let pinReader: PINReader
    let timeout: Duration

    /// The client data of a ceremony, or only its hash when the caller supplied one.
    enum ClientDataInput {
        case collected(CollectedClientData)
        case hash([UInt8])

        var hash: [UInt8] {
            switch self {
            case .collected(let c): c.hash
            case .hash(let h): h
            }
        }

        var json: [UInt8]? {
            if case .collected(let c) = self { return c.json }
            return nil
        }
    }

    /// Checks the RP ID against the origin (WebAuthn L3 §5.1.3 step 8).
    static func checkRelyingParty(_ rpID: String, origin: String) throws {
        let suffixes = PublicSuffixList.system ?? PublicSuffixList(text: "")
        _ = try RelyingPartyIdentifier.validate(rpID, origin: origin, publicSuffixes: suffixes)
    }

    /// A pinUvAuthToken when the ceremony needs one: with the key's built-in UV where it has it
    /// configured, else with the PIN (asked once). Nil when no user verification is needed.
    func token(
        permissions: PINUVAuthTokenPermissions, rpID: String, needed: Bool,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws -> PINUVAuthToken? {
        guard needed else { return nil }
        let pin = try ClientPIN(session: session, info: info)
        if info.isEnabled("uv"), info.isEnabled("pinUvAuthToken") {
            let result = await Self.attempt { () async throws(CTAP2Error) -> PINUVAuthToken in
                try await pin.uvAuthToken(
                    permissions: permissions, rpID: rpID, timeout: timeout, keepalive: keepalive)
            }
            switch result {
            case .success(let token):
                return token
            case .failure(let error):
                // Built-in UV failed or is blocked: fall back to the PIN where there is one.
                let fallBack = error.code == .uvBlocked || error.code == .uvInvalid
                guard fallBack, info.isEnabled("clientPin") else { throw error }
            }
        }
        guard info.isEnabled("clientPin") else {
            throw CLIError(
                .notSupported, code: "pin-uv-not-supported",
                "User verification was asked for, but the key has neither a PIN set nor built-in verification."
            )
        }
        let text = try pinReader.read("PIN for the security key: ")
        let result = await Self.attempt { () async throws(CTAP2Error) -> PINUVAuthToken in
            try await pin.pinUVAuthToken(pin: text, permissions: permissions, rpID: rpID, timeout: timeout)
        }
        switch result {
        case .success(let token): return token
        case .failure(let error): throw await pin.explain(error)
        }
    }

    /// Runs `body`, keeping its CTAP2Error as a value.
    static func attempt<T>(_ body: () async throws(CTAP2Error) -> T) async -> Result<T, CTAP2Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// Whether makeCredential needs a pinUvAuthParam (CTAP 2.1 §6.1.2 steps 6-7).
    func makeCredentialNeedsVerification(uv: Bool, residentKey: Bool) -> Bool {
        if uv { return true }
        guard info.isEnabled("clientPin") || info.isEnabled("uv") else { return false }
        if residentKey { return true }
        return !info.isEnabled("makeCredUvNotRqd")
    }

    func makeCredential(
        rp: RelyingPartyEntity, user: UserEntity, algorithms: [COSEAlgorithm], clientData: ClientDataInput,
        residentKey: Bool, uv: Bool, exclude: [[UInt8]], enterprise: Bool
    ) async throws -> MakeCredentialResponse {
        let prompt = TouchPrompt()
        var request = MakeCredentialRequest(
            clientDataHash: clientData.hash, rp: rp, user: user,
            pubKeyCredParams: algorithms.map { PublicKeyCredentialParameters(algorithm: $0) },
            excludeList: exclude.isEmpty ? nil : exclude.map { PublicKeyCredentialDescriptor(id: $0) },
            options: residentKey ? CommandOptions(residentKey: true) : nil,
            enterpriseAttestation: enterprise ? 2 : nil)
        if enterprise, !info.isEnabled("ep") {
            throw CLIError(
                .notSupported, code: "not-supported", "The key does not offer enterprise attestation.")
        }
        if residentKey, !info.isEnabled("rk") {
            throw CLIError(
                .notSupported, code: "not-supported", "The key cannot store discoverable credentials.")
        }
        if let token = try await token(
            permissions: .makeCredential, rpID: rp.id,
            needed: makeCredentialNeedsVerification(uv: uv, residentKey: residentKey),
            keepalive: prompt.keepalive)
        {
            defer { token.wipe() }
            try request.authorize(with: token)
        } else if uv {
            request.options = CommandOptions(residentKey: residentKey ? true : nil, userVerification: true)
        }
        return try await session.makeCredential(request, timeout: timeout, keepalive: prompt.keepalive)
    }

    func getAssertion(
        rpID: String, allow: [[UInt8]], clientData: ClientDataInput, uv: Bool
    ) async throws -> GetAssertionResponse {
        let prompt = TouchPrompt()
        var request = GetAssertionRequest(
            rpID: rpID, clientDataHash: clientData.hash,
            allowList: allow.isEmpty ? nil : allow.map { PublicKeyCredentialDescriptor(id: $0) })
        if let token = try await token(
            permissions: .getAssertion, rpID: rpID, needed: uv, keepalive: prompt.keepalive)
        {
            defer { token.wipe() }
            try request.authorize(with: token)
        }
        return try await session.getAssertion(request, timeout: timeout, keepalive: prompt.keepalive)
    }
}
