import CBOR
import Transport

/// The one error type of the CTAP2 module: a stable code, one sentence for the user, the
/// authenticator's status where it sent one, and the underlying error where there is one.
public struct CTAP2Error: Error, Sendable, CustomStringConvertible {
    /// Stable, switchable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The authenticator answered with a non-zero CTAP status; see ``CTAP2Error/status``.
        public static let authenticatorStatus = Code(rawValue: "authenticator-status")
        /// The authenticator's reply breaks the CTAP2 or WebAuthn encoding rules.
        public static let malformedResponse = Code(rawValue: "malformed-response")
        /// The transport failed; the ``TransportError`` is the underlying error.
        public static let transport = Code(rawValue: "transport")
        /// A signature or an attestation statement did not verify.
        public static let verificationFailed = Code(rawValue: "verification-failed")
        /// The COSE algorithm or key type is not one this library can verify.
        public static let unsupportedAlgorithm = Code(rawValue: "unsupported-algorithm")
        /// The attestation statement format is not one this library can verify.
        public static let unsupportedAttestationFormat = Code(rawValue: "unsupported-attestation-format")
        /// The attestation certificate breaks the WebAuthn certificate requirements.
        public static let invalidCertificate = Code(rawValue: "invalid-certificate")
        /// A request cannot be sent as built (for example a client data hash of the wrong size).
        public static let invalidRequest = Code(rawValue: "invalid-request")
        /// A request or response is larger than the authenticator's maxMsgSize.
        public static let messageTooLarge = Code(rawValue: "message-too-large")
        /// The operation was cancelled by the caller.
        public static let cancelled = Code(rawValue: "cancelled")
        /// A PIN/UV auth protocol computation failed (bad key-agreement key, wrong sizes).
        public static let pinUVAuthProtocol = Code(rawValue: "pin-uv-auth-protocol")

        public var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// One sentence for the user.
    public var message: String
    /// The CTAP status the authenticator returned, for ``Code/authenticatorStatus``.
    public var status: CTAPStatus?
    /// The underlying error (a ``CBORError``, a ``TransportError``, ...), where there is one.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, status: CTAPStatus? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.underlying = underlying
    }

    /// The error for a non-zero status byte from the authenticator.
    public static func authenticator(_ status: CTAPStatus) -> CTAP2Error {
        CTAP2Error(.authenticatorStatus, status.message, status: status)
    }

    /// A malformed-response error, optionally wrapping the CBOR error underneath.
    static func malformed(_ message: String, _ underlying: CBORError? = nil) -> CTAP2Error {
        CTAP2Error(.malformedResponse, message, underlying: underlying)
    }

    public var description: String {
        var text = message
        if let status { text += " (\(status.name))" }
        if let underlying { text += " (\(underlying))" }
        return text
    }
}
