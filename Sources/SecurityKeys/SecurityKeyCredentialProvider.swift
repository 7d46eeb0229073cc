/// Makes registration and assertion requests for one relying party, as AuthenticationServices'
/// `ASAuthorizationSecurityKeyPublicKeyCredentialProvider` does.
///
/// ```swift
/// let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.com")
/// let request = provider.createCredentialRegistrationRequest(
///     challenge: challenge, displayName: "Anne", name: "anne@example.com", userID: userID)
/// ```
public struct SecurityKeyCredentialProvider: Hashable, Sendable {
    /// The relying party identifier (a domain) every request is made for.
    public var relyingPartyIdentifier: String

    /// Creates a provider for `relyingPartyIdentifier`.
    public init(relyingPartyIdentifier: String) {
        self.relyingPartyIdentifier = relyingPartyIdentifier
    }

    /// A request to register a new credential for a user account.
    public func createCredentialRegistrationRequest(
        challenge: [UInt8], displayName: String, name: String, userID: [UInt8]
    ) -> SecurityKeyCredentialRegistrationRequest {
        SecurityKeyCredentialRegistrationRequest(
            relyingPartyIdentifier: relyingPartyIdentifier, challenge: challenge, displayName: displayName,
            name: name, userID: userID)
    }

    /// A request to sign in with an existing credential.
    public func createCredentialAssertionRequest(challenge: [UInt8]) -> SecurityKeyCredentialAssertionRequest
    {
        SecurityKeyCredentialAssertionRequest(
            relyingPartyIdentifier: relyingPartyIdentifier, challenge: challenge)
    }
}
