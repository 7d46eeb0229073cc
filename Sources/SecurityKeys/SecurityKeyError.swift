import CTAP2
import Transport

/// The one error type of the provider API: a stable code to switch on, a sentence for the
/// user, and the underlying error where there is one.
public struct SecurityKeyError: Error, Sendable, CustomStringConvertible {
    /// Stable error codes, mirroring ASAuthorizationError where it fits. They share one
    /// namespace with the layers below (Docs/Architecture.md, "Errors"): a condition those
    /// layers name too is spelled as they spell it.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The relying party identifier is not valid for the origin.
        public static let invalidRelyingParty = Code(rawValue: "invalid-relying-party")
        /// The origin is not a secure, well-formed web origin.
        public static let invalidOrigin = Code(rawValue: "invalid-origin")
        /// The request may not be made from its origin (an AppID of another site: WebAuthn's
        /// "SecurityError").
        public static let securityError = Code(rawValue: "security-error")
        /// A local file or setting the library needs is missing or unreadable.
        public static let configuration = Code(rawValue: "configuration")
        /// The caller cancelled the request (ASAuthorizationError.canceled).
        public static let cancelled = Code(rawValue: TransportError.Code.cancelled.rawValue)
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
        public static let matchedExcludedCredential = Code(rawValue: CTAP2Error.Code.credentialExcluded.rawValue)
        /// The key holds no credential the relying party accepts.
        public static let noCredentials = Code(rawValue: CTAP2Error.Code.noCredentials.rawValue)
        /// The request needs user verification and the key has no PIN set: set one first.
        public static let pinNotSet = Code(rawValue: CTAP2Error.Code.pinNotSet.rawValue)
        /// The key needs its PIN (or built-in UV) and none was given.
        public static let pinRequired = Code(rawValue: CTAP2Error.Code.pinRequired.rawValue)
        /// The PIN was wrong.
        public static let pinInvalid = Code(rawValue: CTAP2Error.Code.pinInvalid.rawValue)
        /// Too many wrong PINs in a row: remove and re-insert the key.
        public static let pinAuthBlocked = Code(rawValue: CTAP2Error.Code.pinAuthBlocked.rawValue)
        /// No PIN attempts remain; only a reset makes the key usable again.
        public static let pinBlocked = Code(rawValue: CTAP2Error.Code.pinBlocked.rawValue)
        /// The key demands a PIN change before its PIN can be used.
        public static let pinChangeRequired = Code(rawValue: CTAP2Error.Code.pinChangeRequired.rawValue)
        /// Built-in user verification is blocked.
        public static let uvBlocked = Code(rawValue: CTAP2Error.Code.uvBlocked.rawValue)
        /// The user declined on the key.
        public static let operationDenied = Code(rawValue: CTAP2Error.Code.operationDenied.rawValue)
        /// The request's deadline passed.
        public static let timeout = Code(rawValue: TransportError.Code.timeout.rawValue)
        /// No security key was found before the deadline, or the one in use went away.
        public static let noDevice = Code(rawValue: TransportError.Code.noDevice.rawValue)
        /// A key's device node exists but this user may not open it.
        public static let permissionDenied = Code(rawValue: TransportError.Code.permissionDenied.rawValue)
        /// The request is not valid as built (bad challenge, user ID, client data hash).
        public static let invalidRequest = Code(rawValue: CTAP2Error.Code.invalidRequest.rawValue)

        /// The former spelling of ``cancelled`` (code `canceled` until 0.3).
        @available(*, deprecated, renamed: "cancelled")
        public static var canceled: Code { .cancelled }
        /// The former spelling of ``timeout`` (code `timed-out` until 0.3).
        @available(*, deprecated, renamed: "timeout")
        public static var timedOut: Code { .timeout }
        /// The former spelling of ``noDevice`` (code `no-key-found` until 0.3).
        @available(*, deprecated, renamed: "noDevice")
        public static var noKeyFound: Code { .noDevice }

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

extension SecurityKeyError {
    /// Whether time ran out: the request's (or the transport's) deadline passed, or the key
    /// gave up waiting for the user (CTAP2_ERR_USER_ACTION_TIMEOUT) or for the rest of a
    /// message (CTAP1_ERR_TIMEOUT). A user interface that asked for a touch says so as "no
    /// touch in time" rather than as a failure of the key.
    public var isTimeout: Bool {
        let timeouts: Set<String> = [
            Code.timeout.rawValue, CTAP2Error.Code.userActionTimeout.rawValue, CTAP2Error.Code.messageTimeout.rawValue,
        ]
        if let ctap = underlying as? CTAP2Error {
            if ctap.code == .transport, let transport = ctap.underlying as? TransportError {
                return timeouts.contains(transport.code.rawValue)
            }
            return timeouts.contains(ctap.code.rawValue)
        }
        if let transport = underlying as? TransportError { return timeouts.contains(transport.code.rawValue) }
        return timeouts.contains(code.rawValue)
    }

    /// The kind of failure: a CTAP2 or transport failure underneath keeps its own.
    public var category: FailureCategory {
        if let ctap = underlying as? CTAP2Error { return ctap.category }
        if let transport = underlying as? TransportError { return transport.category }
        switch code {
        case .invalidOrigin, .invalidRelyingParty, .invalidRequest, .securityError: return .usage
        case .cancelled, .timeout, .operationDenied: return .cancelled
        case .noDevice: return .noDevice
        case .notHandled: return .notSupported
        case .pinNotSet, .pinRequired, .pinInvalid, .pinAuthBlocked, .pinBlocked, .pinChangeRequired, .uvBlocked:
            return .pinProblem
        default: return .failure
        }
    }
}
