import _SecurityKeyInternals
import CTAP2

/// An assertion response as a relying party receives it (WebAuthn §5.2.2
/// AuthenticatorAssertionResponse, AuthenticationResponseJSON), its authenticator data parsed.
public struct AssertionResponse: Sendable {
    /// The credential ID as the client sent it (base64url), when it sent one.
    public var id: String?
    /// The client data.
    public var clientData: ClientDataInput
    /// The authenticator data that was signed.
    public var authenticatorData: AuthenticatorData
    /// The assertion signature over authenticatorData ‖ SHA-256(clientDataJSON).
    public var signature: [UInt8]

    /// Creates a response from its parts.
    public init(
        id: String?, clientData: ClientDataInput, authenticatorData: AuthenticatorData, signature: [UInt8]
    ) {
        self.id = id
        self.clientData = clientData
        self.authenticatorData = authenticatorData
        self.signature = signature
    }
}

/// What a verified assertion established (WebAuthn §7.2 steps 22-24).
public struct VerifiedAssertion: Sendable {
    /// The credential's ID, when the credential record names it.
    public var credentialID: [UInt8]?
    /// The new signature counter, to store in the credential record.
    public var signCount: UInt32
    /// The authenticator data flags (UP, UV, BE, BS, ...).
    public var flags: AuthenticatorData.Flags
    /// What the signature counter said.
    public var signCountCheck: SignCountCheck
}

/// Verifies authentication ceremonies (WebAuthn §7.2) against a ``RelyingPartyPolicy`` and a
/// stored ``CredentialRecord``.
public struct AssertionVerifier: Sendable {
    /// What the relying party expects.
    public var policy: RelyingPartyPolicy

    /// Creates a verifier.
    public init(policy: RelyingPartyPolicy) { self.policy = policy }

    /// Verifies `response` as made with `credential`, returning what it established or
    /// throwing the first check that failed.
    public func verify(
        _ response: AssertionResponse, credential: CredentialRecord
    ) throws(WebAuthnVerificationError) -> VerifiedAssertion {
        let authData = response.authenticatorData
        let clientDataHash = try response.clientData.checkedHash(type: "webauthn.get", policy: policy)
        try checkRelyingParty(authData, policy)
        try checkUser(authData, policy, ceremony: "assertion")
        if let registered = credential.id, let id = response.id, !sameCredentialID(id, registered) {
            throw WebAuthnVerificationError(
                .credentialIDMismatch,
                "The assertion was made with credential \(id), not the registered \(Base64URL.encode(registered)).")
        }
        let message = authData.bytes + clientDataHash
        switch credential.publicKey {
        case .cose(let key): try key.verifySignature(response.signature, for: message)
        case .key(let key, let algorithm):
            try key.verifySignature(response.signature, for: message, algorithm: algorithm)
        }
        let check = Self.signCountCheck(stored: credential.signCount, received: authData.signCount)
        if check == .didNotIncrease, policy.signCount == .reject {
            throw WebAuthnVerificationError(
                .signCountNotIncreased,
                "The signature counter did not grow (\(authData.signCount) after \(credential.signCount)): the key may be cloned."
            )
        }
        return VerifiedAssertion(
            credentialID: credential.id, signCount: authData.signCount,
            flags: authData.flags, signCountCheck: check)
    }

    /// WebAuthn §7.2 step 22: a counter that is not zero on both sides must grow.
    public static func signCountCheck(stored: UInt32, received: UInt32) -> SignCountCheck {
        if stored == 0, received == 0 { return .notSupported }
        return received > stored ? .increased : .didNotIncrease
    }
}
