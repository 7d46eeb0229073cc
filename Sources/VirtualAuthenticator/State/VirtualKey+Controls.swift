// What the program serving a key and the tests control: the simulated user's answers, power
// cycles, winks, the test clock and the secrets log. None of it reads bytes from a host, so it
// is outside the `virtual-key` fuzz target's parser files (Docs/Fuzzing.md).

extension VirtualKey {
    /// The root CA certificate as PEM text.
    public nonisolated var attestationRootCertificatePEM: String {
        AttestationIdentity.pem(attestationRootCertificateDER)
    }

    /// Writes every pinUvAuthToken this key issues and every shared secret it agrees from now
    /// on to `log` (test-only: see ``VirtualKeySecretsLog``).
    public func recordSecrets(to log: VirtualKeySecretsLog) {
        secretsLog = log
    }

    /// Changes how user presence is answered; a request already waiting sees the change.
    public func setUserPresence(_ policy: UserPresencePolicy) {
        userPresence = policy
    }

    /// Changes how built-in user verification answers; the next verification sees the change.
    public func setUserVerification(_ policy: UserVerificationPolicy) {
        userVerification = policy
    }

    /// The number of discoverable credentials stored.
    public var discoverableCredentialCount: Int { state.credentials.count }

    /// Tells the key it was powered off and on: the reset window opens again, getNextAssertion
    /// and credential enumeration state is lost, and the clientPIN state starts afresh (new key-agreement keys, no token,
    /// PIN entry unblocked after three wrong PINs; CTAP 2.1 §6.5.4 `initialize`).
    public func powerCycle() async {
        poweredUp = now
        pendingAssertions = nil
        pendingEnumeration = nil
        pendingLargeBlobWrite = nil
        clientPINSession = ClientPINSession()
        bioSession.pending = nil
    }

    /// Records a wink (CTAPHID_WINK); a software key has no LED.
    public func wink() async {
        winkCount += 1
    }

    /// Moves this key's clock forward, as if `duration` had passed: tests of the reset window,
    /// token lifetimes and the getNextAssertion timer step over them instead of sleeping.
    public func advanceClock(by duration: Duration) {
        clockOffset += duration
    }

    /// The largeBlobKey of a discoverable credential, if it has one (for tests).
    public func largeBlobKey(credentialID: [UInt8]) -> [UInt8]? { state.largeBlobKeys[credentialID] }

    /// Writes the tokens just issued to the secrets log, if one is set (test-only).
    func recordIssuedTokens() {
        guard let secretsLog else { return }
        // Every protocol's token is valid from now on, not only the one sent.
        for other in PINProtocol.allCases {
            secretsLog.record(.pinUVAuthToken, protocolVersion: Int(other.rawValue), clientPINSession.token(other))
        }
    }
}
