/// The one error type of the provider API: a stable code to switch on, a sentence for the
/// user, and the underlying error where there is one.
public struct SecurityKeyError: Error, Sendable, CustomStringConvertible {
    /// Stable error codes, mirroring ASAuthorizationError where it fits.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The relying party identifier is not valid for the origin.
        public static let invalidRelyingParty = Code(rawValue: "invalid-relying-party")
        /// The origin is not a secure, well-formed web origin.
        public static let invalidOrigin = Code(rawValue: "invalid-origin")
        /// A local file or setting the library needs is missing or unreadable.
        public static let configuration = Code(rawValue: "configuration")
        /// The caller cancelled the request (ASAuthorizationError.canceled).
        public static let canceled = Code(rawValue: "canceled")
        /// The request failed for a reason no other code describes (ASAuthorizationError.failed).
        public static let failed = Code(rawValue: "failed")
        /// The key's reply broke the protocol (ASAuthorizationError.invalidResponse).
        public static let invalidResponse = Code(rawValue: "invalid-response")
        /// No key could handle the request, e.g. none supports the algorithms asked for
        /// (ASAuthorizationError.notHandled).
        public static let notHandled = Code(rawValue: "not-handled")
        /// The request needs the user (a PIN, an account choice) but no interaction handler was
        /// given (ASAuthorizationError.notInteractive).
        public static let notInteractive = Code(rawValue: "not-interactive")
        /// The key already holds one of the excluded credentials
        /// (ASAuthorizationError.matchedExcludedCredential).
        public static let matchedExcludedCredential = Code(rawValue: "matched-excluded-credential")
        /// The key holds no credential the relying party accepts.
        public static let noCredentials = Code(rawValue: "no-credentials")
        /// The request needs user verification and the key has no PIN set: set one first.
        public static let pinNotSet = Code(rawValue: "pin-not-set")
        /// The key needs its PIN (or built-in UV) and none was given.
        public static let pinRequired = Code(rawValue: "pin-required")
        /// The PIN was wrong.
        public static let pinInvalid = Code(rawValue: "pin-invalid")
        /// Too many wrong PINs in a row: remove and re-insert the key.
        public static let pinAuthBlocked = Code(rawValue: "pin-auth-blocked")
        /// No PIN attempts remain; only a reset makes the key usable again.
        public static let pinBlocked = Code(rawValue: "pin-blocked")
        /// The key demands a PIN change before its PIN can be used.
        public static let pinChangeRequired = Code(rawValue: "pin-change-required")
        /// Built-in user verification is blocked.
        public static let uvBlocked = Code(rawValue: "uv-blocked")
        /// The user declined on the key.
        public static let operationDenied = Code(rawValue: "operation-denied")
        /// The request's deadline passed.
        public static let timedOut = Code(rawValue: "timed-out")
        /// No security key was found before the deadline.
        public static let noKeyFound = Code(rawValue: "no-key-found")
        /// A key's device node exists but this user may not open it.
        public static let permissionDenied = Code(rawValue: "permission-denied")
        /// The request is not valid as built (bad challenge, user ID, client data hash).
        public static let invalidRequest = Code(rawValue: "invalid-request")

        public var description: String { rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// One sentence for the user.
    public var message: String
    /// The underlying error, where there is one.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String { message }
}
