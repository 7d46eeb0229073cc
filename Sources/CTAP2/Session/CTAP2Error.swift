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
        /// The PIN was wrong; ``CTAP2Error/retriesLeft`` says how many attempts remain
        /// (CTAP2_ERR_PIN_INVALID).
        public static let pinInvalid = Code(rawValue: "pin-invalid")
        /// Too many wrong PINs in a row: the key must be removed and re-inserted before the
        /// next attempt (CTAP2_ERR_PIN_AUTH_BLOCKED).
        public static let pinAuthBlocked = Code(rawValue: "pin-auth-blocked")
        /// No PIN attempts remain: only a reset makes the key usable again (CTAP2_ERR_PIN_BLOCKED).
        public static let pinBlocked = Code(rawValue: "pin-blocked")
        /// The key has no PIN yet; set one first (CTAP2_ERR_PIN_NOT_SET).
        public static let pinNotSet = Code(rawValue: "pin-not-set")
        /// The new PIN breaks the PIN rules (length, or the key's policy); nothing was changed
        /// (CTAP2_ERR_PIN_POLICY_VIOLATION, or refused before the key was asked).
        public static let pinPolicyViolation = Code(rawValue: "pin-policy-violation")
        /// The key demands a new PIN before its PIN can be used (getInfo forcePINChange).
        public static let pinChangeRequired = Code(rawValue: "pin-change-required")
        /// The key does not offer what was asked of its PIN/UV features (no clientPin, no
        /// built-in UV, no shared PIN/UV auth protocol).
        public static let pinUVNotSupported = Code(rawValue: "pin-uv-not-supported")
        /// A pinUvAuthParam or token was refused, for example because the token expired
        /// (CTAP2_ERR_PIN_AUTH_INVALID): get a new token.
        public static let pinAuthInvalid = Code(rawValue: "pin-auth-invalid")
        /// The operation needs a PIN or built-in user verification (CTAP2_ERR_PUAT_REQUIRED).
        public static let pinRequired = Code(rawValue: "pin-required")
        /// The token lacks the permission or RP ID this command needs
        /// (CTAP2_ERR_UNAUTHORIZED_PERMISSION, or refused before the key was asked).
        public static let unauthorizedPermission = Code(rawValue: "unauthorized-permission")
        /// Built-in user verification failed; ``CTAP2Error/retriesLeft`` says how many attempts
        /// remain (CTAP2_ERR_UV_INVALID).
        public static let uvInvalid = Code(rawValue: "uv-invalid")
        /// Built-in user verification is blocked; fall back to the PIN (CTAP2_ERR_UV_BLOCKED).
        public static let uvBlocked = Code(rawValue: "uv-blocked")
        /// A ``PINUVAuthToken`` or shared secret was used after it was wiped.
        public static let secretWiped = Code(rawValue: "secret-wiped")

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
    /// PIN or UV attempts left, for ``Code/pinInvalid`` and ``Code/uvInvalid`` when the key
    /// reported them.
    public var retriesLeft: Int?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, status: CTAPStatus? = nil,
        underlying: (any Error & Sendable)? = nil, retriesLeft: Int? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.underlying = underlying
        self.retriesLeft = retriesLeft
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
