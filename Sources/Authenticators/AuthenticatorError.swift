import CTAP2
import Transport

/// The one error type of the device layer: a stable code, one sentence for the user, and the
/// underlying ``CTAP2Error`` or ``TransportError``.
///
/// Codes share one namespace with the layers below: an error that comes from a CTAP2 or
/// transport failure keeps that layer's code string (`pin-invalid`, `timeout`, `no-device`), so
/// a script sees the same code whichever layer it reads; the codes below are the ones this layer
/// adds.
public struct AuthenticatorError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Stable, switchable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// No authenticator is present, or the one named is not there.
        public static let noDevice = Code(rawValue: TransportError.Code.noDevice.rawValue)
        /// The authenticator went away (unplugged, card removed) while it was in use.
        public static let removed = Code(rawValue: "removed")
        /// An authenticator is present but this user may not open it.
        public static let permissionDenied = Code(rawValue: TransportError.Code.permissionDenied.rawValue)
        /// The deadline passed.
        public static let timeout = Code(rawValue: TransportError.Code.timeout.rawValue)
        /// The caller cancelled, or the user declined a prompt.
        public static let cancelled = Code(rawValue: TransportError.Code.cancelled.rawValue)
        /// The operation needs the user (a PIN) and no interaction was given.
        public static let notInteractive = Code(rawValue: "not-interactive")
        /// The URI names no transport this build knows.
        public static let invalidURI = Code(rawValue: TransportError.Code.invalidURI.rawValue)
        /// The authenticator cannot do what was asked.
        public static let notSupported = Code(rawValue: TransportError.Code.notSupported.rawValue)
        /// No PIN attempts remain; only a reset makes the key usable again.
        public static let pinBlocked = Code(rawValue: CTAP2Error.Code.pinBlocked.rawValue)
        /// The key has no PIN, and the operation needs one.
        public static let pinNotSet = Code(rawValue: CTAP2Error.Code.pinNotSet.rawValue)
        /// The operation needs user verification that this key cannot do.
        public static let pinUVNotSupported = Code(rawValue: CTAP2Error.Code.pinUVNotSupported.rawValue)
        /// Built-in user verification is blocked and the key has no PIN to fall back to.
        public static let uvBlocked = Code(rawValue: CTAP2Error.Code.uvBlocked.rawValue)
        /// The key refused the command in its current state; for a reset: it was plugged in too
        /// long ago.
        public static let notAllowed = Code(rawValue: CTAP2Error.Code.notAllowed.rawValue)
        /// The user declined on the key.
        public static let operationDenied = Code(rawValue: CTAP2Error.Code.operationDenied.rawValue)
        /// The user did not act on the key in time.
        public static let userActionTimeout = Code(rawValue: CTAP2Error.Code.userActionTimeout.rawValue)
        /// The key that arrived is not the one the operation was started with (another AAGUID
        /// or another port), so the operation was not sent to it.
        public static let differentDevice = Code(rawValue: "different-device")

        public var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// One sentence for the user.
    public var message: String
    /// The URI of the authenticator concerned, where there is one.
    public var deviceURI: String?
    /// The underlying error (a ``CTAP2Error`` or ``TransportError``), where there is one.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, deviceURI: String? = nil, underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.deviceURI = deviceURI
        self.underlying = underlying
    }

    /// A CTAP2 failure, keeping its code (a transport failure underneath keeps the transport's).
    public init(_ error: CTAP2Error, deviceURI: String? = nil) {
        if error.code == .transport, let transport = error.underlying as? TransportError {
            self.init(transport, deviceURI: deviceURI)
            underlying = error
            return
        }
        if error.code == .pinBlocked {
            // One sentence for a blocked PIN wherever it is found: what a reset erases.
            self = .pinBlocked(deviceURI: deviceURI, underlying: error)
            return
        }
        self.init(Code(rawValue: error.code.rawValue), error.message, deviceURI: deviceURI, underlying: error)
    }

    /// A transport failure, keeping its code.
    public init(_ error: TransportError, deviceURI: String? = nil) {
        self.init(Code(rawValue: error.code.rawValue), error.message, deviceURI: deviceURI, underlying: error)
    }

    /// The CTAP2 error underneath, where the failure came from one.
    public var ctap2Error: CTAP2Error? { underlying as? CTAP2Error }

    /// PIN or UV attempts left, when the key reported them with the failure.
    public var retriesLeft: Int? { ctap2Error?.retriesLeft }

    /// The PIN is blocked: explains that a reset is the only way back and what it erases.
    public static func pinBlocked(deviceURI: String? = nil, underlying: (any Error & Sendable)? = nil)
        -> AuthenticatorError
    {
        AuthenticatorError(
            .pinBlocked,
            "The PIN is blocked: no attempts are left. Only a reset makes the key usable again, and a reset erases every credential on it (passkeys and second-factor registrations) and its PIN.",
            deviceURI: deviceURI, underlying: underlying)
    }

    static func timedOut(_ what: String, deviceURI: String? = nil) -> AuthenticatorError {
        AuthenticatorError(.timeout, "\(what) did not happen before the deadline.", deviceURI: deviceURI)
    }

    static func cancelled(deviceURI: String? = nil) -> AuthenticatorError {
        AuthenticatorError(.cancelled, "The operation was cancelled.", deviceURI: deviceURI)
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: AuthenticatorError, rhs: AuthenticatorError) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String {
        if let underlying { return "\(message) (\(underlying))" }
        return message
    }
}

extension AuthenticatorError {
    /// The kind of failure: a CTAP2 or transport failure underneath keeps its own.
    public var category: FailureCategory {
        if let ctap2Error { return ctap2Error.category }
        if let transport = underlying as? TransportError { return transport.category }
        switch code {
        case .noDevice, .removed: return .noDevice
        case .timeout, .cancelled, .operationDenied, .userActionTimeout: return .cancelled
        case .invalidURI: return .usage
        case .notSupported, .pinUVNotSupported: return .notSupported
        case .pinBlocked, .pinNotSet, .uvBlocked: return .pinProblem
        default: return .failure
        }
    }
}
