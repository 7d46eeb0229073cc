import Transport

/// Why a ceremony through securitykeyd failed: a stable code, one sentence, and for the
/// daemon's own refusals the WebAuthn name it gave.
public struct SecurityKeyDaemonClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable code in kebab-case.
    public struct Code: RawRepresentable, Hashable, Sendable {
        /// The code's text.
        public var rawValue: String
        /// Wraps a code's text.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The bus cannot be reached, or nobody owns (or can start) the daemon's name.
        public static let noDaemon = Code(rawValue: "no-daemon")
        /// A D-Bus call failed below the daemon (the bus refused it, or the connection broke).
        public static let dbus = Code(rawValue: "dbus")
        /// The daemon's answer is not what the interface promises.
        public static let malformedResponse = Code(rawValue: "malformed-response")
        /// The request's options cannot be written as JSON.
        public static let invalidInput = Code(rawValue: "invalid-input")
        /// The request holds something the daemon's WebAuthn JSON cannot carry (``reason`` says what).
        public static let notExpressible = Code(rawValue: "not-expressible")
        /// The daemon answered AbortError.
        public static let daemonAbort = Code(rawValue: "daemon-abort")
        /// The daemon answered NotAllowedError.
        public static let daemonNotAllowed = Code(rawValue: "daemon-not-allowed")
        /// The daemon answered NotSupportedError.
        public static let daemonNotSupported = Code(rawValue: "daemon-not-supported")
        /// The daemon answered TypeError.
        public static let daemonTypeError = Code(rawValue: "daemon-type-error")
        /// The daemon answered SecurityError.
        public static let daemonSecurityError = Code(rawValue: "daemon-security-error")
        /// The daemon answered InvalidStateError.
        public static let daemonInvalidState = Code(rawValue: "daemon-invalid-state")
        /// The daemon did not answer in time.
        public static let daemonNoReply = Code(rawValue: "daemon-no-reply")
        /// Any other error the daemon answered.
        public static let daemonError = Code(rawValue: "daemon-error")
    }

    /// What a ``Code/notExpressible`` request holds that cannot be sent.
    public enum Reason: Hashable, Sendable {
        /// Only a client data hash: the daemon builds the client data from an origin.
        case clientDataHash
        /// Extension inputs given as raw CBOR.
        case rawExtensionInputs
        /// Raw hmac-secret salts (WebAuthn JSON has only the prf extension).
        case hmacSecretSalts
    }

    /// The code.
    public var code: Code
    /// One sentence.
    public var message: String
    /// For ``Code/notExpressible``: what cannot be sent.
    public var reason: Reason?
    /// For an error the daemon answered: its WebAuthn (DOMException) name, or the D-Bus error name.
    public var daemonErrorName: String?

    /// An error with a code and a sentence.
    public init(_ code: Code, _ message: String, reason: Reason? = nil, daemonErrorName: String? = nil) {
        self.code = code
        self.message = message
        self.reason = reason
        self.daemonErrorName = daemonErrorName
    }

    /// The sentence.
    public var description: String { message }
}

extension SecurityKeyDaemonClientError {
    /// The kind of failure, as the provider's own errors say it: no daemon is no device, a
    /// refusal for the PIN a PIN problem, another refusal or an abort a cancellation.
    public var category: FailureCategory {
        switch code {
        case .notExpressible, .daemonTypeError, .daemonSecurityError: .usage
        case .noDaemon: .noDevice
        case .daemonAbort, .daemonNoReply: .cancelled
        case .daemonNotAllowed: message.contains("PIN") ? .pinProblem : .cancelled
        case .daemonNotSupported: .notSupported
        default: .failure
        }
    }
}
