import CTAP2

/// What a relying party expects of one ceremony (WebAuthn §7.1 and §7.2): the values the
/// verifiers check a response against. A `nil` expectation is not checked, for tools that
/// inspect a response without knowing everything the relying party knew.
public struct RelyingPartyPolicy: Sendable, Hashable {
    /// The RP ID whose SHA-256 the authenticator data's rpIdHash must be (§7.1 step 13).
    public var relyingPartyID: String?
    /// The origins the client data's origin may be (§7.1 step 9).
    public var origins: Set<String>?
    /// The challenge the relying party sent; the client data's challenge must be its
    /// base64url encoding (§7.1 step 8).
    public var challenge: [UInt8]?
    /// How the client data's crossOrigin and topOrigin are judged (§7.1 steps 10-11).
    public var crossOrigin: CrossOriginPolicy
    /// Whether the UV flag must be set (§7.1 step 15: userVerification "required").
    public var requiresUserVerification: Bool
    /// The COSE algorithms a new credential may use (§7.1 step 17: pubKeyCredParams); `nil`
    /// allows any this module verifies.
    public var allowedAlgorithms: Set<COSEAlgorithm>?
    /// What an assertion whose signature counter did not grow does (§7.2 step 22).
    public var signCount: SignCountPolicy

    /// Creates a policy.
    public init(
        relyingPartyID: String?, origins: Set<String>? = nil, challenge: [UInt8]? = nil,
        crossOrigin: CrossOriginPolicy = .sameOriginOnly, requiresUserVerification: Bool = false,
        allowedAlgorithms: Set<COSEAlgorithm>? = nil, signCount: SignCountPolicy = .reject
    ) {
        self.relyingPartyID = relyingPartyID
        self.origins = origins
        self.challenge = challenge
        self.crossOrigin = crossOrigin
        self.requiresUserVerification = requiresUserVerification
        self.allowedAlgorithms = allowedAlgorithms
        self.signCount = signCount
    }
}

/// How the client data's crossOrigin and topOrigin members are judged (WebAuthn §7.1 steps
/// 10-11, §5.8.1).
public enum CrossOriginPolicy: Sendable, Hashable {
    /// Neither member is looked at.
    case unchecked
    /// The ceremony must not have run in a cross-origin iframe: crossOrigin true or a
    /// topOrigin is refused.
    case sameOriginOnly
    /// Cross-origin iframes are expected; a topOrigin, when present, must be one of these
    /// (`nil`: any top origin).
    case allowed(topOrigins: Set<String>?)
}

/// What an assertion whose signature counter did not grow does (WebAuthn §6.1.1, §7.2 step 22).
public enum SignCountPolicy: Sendable, Hashable {
    /// The assertion fails with ``WebAuthnVerificationError/Code/signCountNotIncreased``.
    case reject
    /// The assertion verifies and reports ``SignCountCheck/didNotIncrease``, for relying
    /// parties that weigh the signal themselves.
    case report
}

/// What the signature counter said about an assertion (WebAuthn §6.1.1).
public enum SignCountCheck: Sendable, Hashable {
    /// Both the stored and the new count are zero: the authenticator keeps no counter.
    case notSupported
    /// The counter grew.
    case increased
    /// The counter did not grow: the authenticator may be cloned.
    case didNotIncrease
}
