import CBOR
import Transport

/// The one error type of the CTAP2 module: a stable code, one sentence for the user, the
/// authenticator's status where it sent one, and the underlying error where there is one.
///
/// Two errors are equal when their code and status are; the message, the underlying error
/// and where the error was made (``file``, ``line``) are for people, not for matching.
/// A status from the authenticator becomes a code in one place, ``classify(_:)``.
public struct CTAP2Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable, switchable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The authenticator answered with a non-zero CTAP status that has no code of its own;
        /// see ``CTAP2Error/status``.
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
        /// A CTAP 2.0 key's PIN token expired (CTAP2_ERR_PIN_TOKEN_EXPIRED): get a new one.
        public static let pinTokenExpired = Code(rawValue: "pin-token-expired")
        /// A credential on the exclude list is already on the key (CTAP2_ERR_CREDENTIAL_EXCLUDED).
        public static let credentialExcluded = Code(rawValue: "credential-excluded")
        /// The key holds no matching credential (CTAP2_ERR_NO_CREDENTIALS).
        public static let noCredentials = Code(rawValue: "no-credentials")
        /// The user declined on the key (CTAP2_ERR_OPERATION_DENIED).
        public static let operationDenied = Code(rawValue: "operation-denied")
        /// The user did not act on the key in time (CTAP2_ERR_USER_ACTION_TIMEOUT,
        /// CTAP2_ERR_ACTION_TIMEOUT).
        public static let userActionTimeout = Code(rawValue: "user-action-timeout")
        /// The key ended the request because the platform cancelled it (CTAP2_ERR_KEEPALIVE_CANCEL).
        public static let keepaliveCancel = Code(rawValue: "keepalive-cancel")
        /// The key does not allow this command in its current state (CTAP2_ERR_NOT_ALLOWED).
        public static let notAllowed = Code(rawValue: "not-allowed")
        /// The key does not support a requested option (CTAP2_ERR_UNSUPPORTED_OPTION).
        public static let unsupportedOption = Code(rawValue: "unsupported-option")
        /// The key does not support a requested extension (CTAP2_ERR_UNSUPPORTED_EXTENSION).
        public static let unsupportedExtension = Code(rawValue: "unsupported-extension")
        /// The key does not know the command (CTAP1_ERR_INVALID_COMMAND).
        public static let invalidCommand = Code(rawValue: "invalid-command")
        /// The key timed out waiting for the rest of a message (CTAP1_ERR_TIMEOUT).
        public static let messageTimeout = Code(rawValue: "message-timeout")
        /// The large-blob array would not fit the key's maxSerializedLargeBlobArray
        /// (CTAP2_ERR_LARGE_BLOB_STORAGE_FULL, or refused before the key was asked).
        public static let largeBlobStorageFull = Code(rawValue: "large-blob-storage-full")
        /// The key's large-blob array is corrupted (it reads as empty); it is only overwritten
        /// when the caller forces it.
        public static let largeBlobCorrupted = Code(rawValue: "large-blob-corrupted")
        /// The credential's large-blob entry authenticates but does not open (it does not
        /// inflate to its stated size).
        public static let largeBlobDamaged = Code(rawValue: "large-blob-damaged")
        /// No entry of the large-blob array belongs to the credential.
        public static let noLargeBlob = Code(rawValue: "no-large-blob")
        /// The key found the data written inconsistent (CTAP2_ERR_INTEGRITY_FAILURE).
        public static let integrityFailure = Code(rawValue: "integrity-failure")

        public var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// One sentence for the user.
    public var message: String
    /// The CTAP status the authenticator returned, where the error came from one.
    public var status: CTAPStatus?
    /// The underlying error (a ``CBORError``, a ``TransportError``, ...), where there is one.
    public var underlying: (any Error & Sendable)?
    /// PIN or UV attempts left, for ``Code/pinInvalid`` and ``Code/uvInvalid`` when the key
    /// reported them.
    public var retriesLeft: Int?
    /// The source file that made the error (`#fileID`).
    public var file: String
    /// The line that made the error.
    public var line: Int

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, status: CTAPStatus? = nil,
        underlying: (any Error & Sendable)? = nil, retriesLeft: Int? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.underlying = underlying
        self.retriesLeft = retriesLeft
        self.file = file
        self.line = line
    }

    /// The error for a non-zero status byte from the authenticator, classified by ``classify(_:)``.
    public static func authenticator(
        _ status: CTAPStatus, file: String = #fileID, line: Int = #line
    ) -> CTAP2Error {
        let (code, message) = classify(status)
        return CTAP2Error(code, message, status: status, file: file, line: line)
    }

    /// A malformed-response error, optionally wrapping the CBOR error underneath.
    public static func malformed(
        _ message: String, _ underlying: CBORError? = nil, file: String = #fileID, line: Int = #line
    ) -> CTAP2Error {
        CTAP2Error(.malformedResponse, message, underlying: underlying, file: file, line: line)
    }

    /// A request that cannot be sent as built.
    public static func invalidRequest(_ message: String, file: String = #fileID, line: Int = #line)
        -> CTAP2Error
    {
        CTAP2Error(.invalidRequest, message, file: file, line: line)
    }

    /// A request or reply larger than the authenticator's maxMsgSize.
    public static func messageTooLarge(_ message: String, file: String = #fileID, line: Int = #line)
        -> CTAP2Error
    {
        CTAP2Error(.messageTooLarge, message, file: file, line: line)
    }

    /// The caller cancelled; `underlying` is the transport's cancellation where there was one.
    public static func cancelled(
        _ message: String, underlying: TransportError? = nil, file: String = #fileID, line: Int = #line
    ) -> CTAP2Error {
        CTAP2Error(.cancelled, message, underlying: underlying, file: file, line: line)
    }

    /// The transport failed underneath.
    public static func transport(
        _ message: String, underlying: TransportError, file: String = #fileID, line: Int = #line
    ) -> CTAP2Error {
        CTAP2Error(.transport, message, underlying: underlying, file: file, line: line)
    }

    /// A signature or attestation statement did not verify.
    public static func verificationFailed(
        _ message: String, underlying: (any Error & Sendable)? = nil, file: String = #fileID,
        line: Int = #line
    ) -> CTAP2Error {
        CTAP2Error(.verificationFailed, message, underlying: underlying, file: file, line: line)
    }

    /// Something the key lacks among its PIN/UV features.
    public static func pinUVNotSupported(_ message: String, file: String = #fileID, line: Int = #line)
        -> CTAP2Error
    {
        CTAP2Error(.pinUVNotSupported, message, file: file, line: line)
    }

    /// Equal when code and status are.
    public static func == (lhs: CTAP2Error, rhs: CTAP2Error) -> Bool {
        lhs.code == rhs.code && lhs.status == rhs.status
    }

    /// Hashes code and status, as ``==`` compares them.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(status)
    }

    public var description: String {
        var text = message
        if let status { text += " (\(status.name))" }
        if let underlying { text += " (\(underlying))" }
        return text
    }
}

extension CTAP2Error {
    /// The kind of failure (a transport failure underneath keeps its own).
    public var category: FailureCategory {
        if code == .transport, let underlying = underlying as? TransportError { return underlying.category }
        switch code {
        case .cancelled, .keepaliveCancel, .userActionTimeout, .operationDenied, .messageTimeout: return .cancelled
        case .pinInvalid, .pinAuthBlocked, .pinBlocked, .pinNotSet, .pinPolicyViolation, .pinChangeRequired,
            .pinRequired, .pinAuthInvalid, .uvInvalid, .uvBlocked, .pinTokenExpired:
            return .pinProblem
        case .pinUVNotSupported, .unsupportedAttestationFormat, .unsupportedAlgorithm, .unsupportedOption,
            .unsupportedExtension, .invalidCommand:
            return .notSupported
        case .verificationFailed, .invalidCertificate: return .verificationFailed
        default: return .failure
        }
    }
}
