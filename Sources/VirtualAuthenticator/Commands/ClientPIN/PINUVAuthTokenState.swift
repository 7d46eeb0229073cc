import _SecurityKeyInternals
import Crypto

/// What a pinUvAuthToken allows (CTAP 2.1 §6.5.5.7 "permissions").
struct PINUVAuthPermissions: OptionSet, Hashable, Sendable {
    let rawValue: UInt64

    /// mc: authenticatorMakeCredential.
    static let makeCredential = PINUVAuthPermissions(rawValue: 0x01)
    /// ga: authenticatorGetAssertion.
    static let getAssertion = PINUVAuthPermissions(rawValue: 0x02)
    /// cm: authenticatorCredentialManagement.
    static let credentialManagement = PINUVAuthPermissions(rawValue: 0x04)
    /// be: authenticatorBioEnrollment.
    static let bioEnrollment = PINUVAuthPermissions(rawValue: 0x08)
    /// lbw: authenticatorLargeBlobs writes.
    static let largeBlobWrite = PINUVAuthPermissions(rawValue: 0x10)
    /// acfg: authenticatorConfig.
    static let authenticatorConfiguration = PINUVAuthPermissions(rawValue: 0x20)
    /// pcmr: read-only credential management with a persistent token (CTAP 2.2), granted alone by keys with ``VirtualKey/Configuration/persistentPINUVAuthToken``.
    static let persistentCredentialManagementReadOnly = PINUVAuthPermissions(rawValue: 0x40)
    /// Every permission the spec defines; other bits in a request are ignored.
    static let defined = PINUVAuthPermissions(rawValue: 0x7F)
}

/// The pinUvAuthToken state shared by all protocols (CTAP 2.1 §6.5.2.1), with the state
/// maintenance functions of §6.5.3.2.
///
/// The spec describes a timer observer running in the background; here it runs lazily
/// (``observe(now:limits:)``) before every read, which no request can tell apart.
struct PINUVAuthTokenState: Sendable {
    /// How long a token lives (§6.5.2.1).
    struct Limits: Sendable, Hashable {
        /// A fresh token not used within this time stops being usable.
        var initialUsage: Duration
        /// User presence collected with a token counts for this long.
        var userPresent: Duration
        /// No token lives longer than this, used or not.
        var maxUsage: Duration
    }

    private(set) var permissions: PINUVAuthPermissions = []
    private(set) var rpID: String?
    private(set) var inUse = false
    private var userPresent = false
    private var userVerified = false
    private var started: ContinuousClock.Instant?
    private var used = false

    /// beginUsingPinUvAuthToken(userIsPresent) with the permissions and RP ID of the request
    /// that made the token.
    mutating func begin(
        userIsPresent: Bool, permissions: PINUVAuthPermissions, rpID: String?, now: ContinuousClock.Instant
    ) {
        self.permissions = permissions
        self.rpID = rpID
        userPresent = userIsPresent
        userVerified = true
        started = now
        used = false
        inUse = true
    }

    /// pinUvAuthTokenUsageTimerObserver(), evaluated at `now`.
    mutating func observe(now: ContinuousClock.Instant, limits: Limits) {
        guard inUse, let started else { return }
        let elapsed = now - started
        if elapsed >= limits.maxUsage {
            stop()
            return
        }
        if elapsed >= limits.userPresent { userPresent = false }
        if elapsed >= limits.initialUsage && !used { stop() }
    }

    /// stopUsingPinUvAuthToken(): every variable back to its initial value.
    mutating func stop() {
        self = PINUVAuthTokenState()
    }

    /// getUserPresentFlagValue().
    var userPresentFlag: Bool { inUse && userPresent }
    /// getUserVerifiedFlagValue().
    var userVerifiedFlag: Bool { inUse && userVerified }

    /// Records that the platform used the token in an operation (ends the initial usage limit).
    mutating func markUsed() {
        if inUse { used = true }
    }

    /// Associates the permissions RP ID when the token has none yet (§6.1.2 step 11.1.7).
    mutating func bind(rpID: String) {
        if inUse && self.rpID == nil { self.rpID = rpID }
    }

    /// clearUserPresentFlag(), clearUserVerifiedFlag() and
    /// clearPinUvAuthTokenPermissionsExceptLbw(): what a request that collected presence does.
    mutating func consume() {
        guard inUse else { return }
        userPresent = false
        userVerified = false
        permissions = permissions.intersection(.largeBlobWrite)
    }
}

/// The volatile clientPIN state of one power-up (CTAP 2.1 §6.5.4 `initialize`): a
/// key-agreement key and a pinUvAuthToken per protocol, the token state, and the count of
/// consecutive wrong PINs that blocks PIN entry until the next power cycle.
struct ClientPINSession {
    private(set) var keyAgreementKeys: [PINProtocol: P256.KeyAgreement.PrivateKey]
    private(set) var tokens: [PINProtocol: [UInt8]]
    var tokenState = PINUVAuthTokenState()
    var consecutiveMismatches = 0

    /// initialize(): fresh keys and tokens for every protocol.
    init() {
        keyAgreementKeys = [:]
        tokens = [:]
        for pinProtocol in PINProtocol.allCases {
            keyAgreementKeys[pinProtocol] = P256.KeyAgreement.PrivateKey()
            tokens[pinProtocol] = SystemRandom.bytes(PINProtocol.tokenLength)
        }
    }

    func keyAgreementKey(_ pinProtocol: PINProtocol) -> P256.KeyAgreement.PrivateKey {
        keyAgreementKeys[pinProtocol] ?? P256.KeyAgreement.PrivateKey()
    }

    func token(_ pinProtocol: PINProtocol) -> [UInt8] {
        tokens[pinProtocol] ?? []
    }

    /// regenerate(): new key-agreement keys, so that a platform must agree on a new secret.
    mutating func regenerateKeyAgreementKeys() {
        for pinProtocol in PINProtocol.allCases {
            keyAgreementKeys[pinProtocol] = P256.KeyAgreement.PrivateKey()
        }
    }

    /// resetPinUvAuthToken() for every protocol: all existing tokens stop working.
    mutating func resetTokens() {
        for pinProtocol in PINProtocol.allCases {
            tokens[pinProtocol]?.zeroize()
            tokens[pinProtocol] = SystemRandom.bytes(PINProtocol.tokenLength)
        }
        tokenState.stop()
    }
}
