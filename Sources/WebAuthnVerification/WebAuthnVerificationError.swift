/// The one error type of the WebAuthnVerification module: a stable code, one sentence for the
/// user, and the underlying error where there is one. Equal (and hashed) by code alone, so
/// callers can compare with `error == WebAuthnVerificationError(.challengeMismatch, ...)` or
/// switch on ``code``.
public struct WebAuthnVerificationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable, switchable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's stable text.
        public var rawValue: String
        /// Creates a code from its stable text.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A signature or an attestation statement did not verify.
        public static let verificationFailed = Code(rawValue: "verification-failed")
        /// The COSE algorithm or key type is not one this module can verify.
        public static let unsupportedAlgorithm = Code(rawValue: "unsupported-algorithm")
        /// The attestation statement format is not one this module can verify.
        public static let unsupportedAttestationFormat = Code(rawValue: "unsupported-attestation-format")
        /// The attestation certificate breaks the WebAuthn certificate requirements.
        public static let invalidCertificate = Code(rawValue: "invalid-certificate")
        /// An attestation statement or credential key is malformed (missing or mistyped fields,
        /// a point off its curve).
        public static let malformedInput = Code(rawValue: "malformed-input")
        /// The client data hash is not 32 bytes.
        public static let invalidClientDataHash = Code(rawValue: "invalid-client-data-hash")
        /// The clientDataJSON is not a JSON object (WebAuthn §7.1 step 5).
        public static let malformedClientData = Code(rawValue: "malformed-client-data")
        /// The client data's type is not the ceremony's (WebAuthn §7.1 step 7, §7.2 step 11).
        public static let clientDataTypeMismatch = Code(rawValue: "client-data-type-mismatch")
        /// The client data's challenge is not the expected one (WebAuthn §7.1 step 8).
        public static let challengeMismatch = Code(rawValue: "challenge-mismatch")
        /// The client data's origin is not an expected one (WebAuthn §7.1 step 9).
        public static let originMismatch = Code(rawValue: "origin-mismatch")
        /// The ceremony ran in a cross-origin iframe the policy does not allow, or under a
        /// top origin it does not expect (WebAuthn §7.1 steps 10-11).
        public static let crossOriginNotAllowed = Code(rawValue: "cross-origin-not-allowed")
        /// The authenticator data is for another relying party (WebAuthn §7.1 step 13).
        public static let rpIDHashMismatch = Code(rawValue: "rp-id-hash-mismatch")
        /// The UP flag is clear (WebAuthn §7.1 step 14).
        public static let userPresenceMissing = Code(rawValue: "user-presence-missing")
        /// The policy requires user verification and the UV flag is clear (WebAuthn §7.1 step 15).
        public static let userVerificationMissing = Code(rawValue: "user-verification-missing")
        /// A registration's authenticator data holds no attested credential.
        public static let attestedCredentialMissing = Code(rawValue: "attested-credential-missing")
        /// The response's credential ID is not the one in its authenticator data, or not the
        /// registered one.
        public static let credentialIDMismatch = Code(rawValue: "credential-id-mismatch")
        /// The credential's algorithm is not among the policy's (WebAuthn §7.1 step 17).
        public static let algorithmNotAllowed = Code(rawValue: "algorithm-not-allowed")
        /// The signature counter did not grow: the authenticator may be cloned (WebAuthn §7.2
        /// step 22).
        public static let signCountNotIncreased = Code(rawValue: "sign-count-not-increased")
        /// The attestation carries no certificate, but the trust policy needs one.
        public static let attestationCertificateMissing = Code(rawValue: "attestation-certificate-missing")
        /// The attestation trust path does not lead to a trust anchor (WebAuthn §7.1 step 23).
        public static let untrustedAttestation = Code(rawValue: "untrusted-attestation")

        /// A trust anchor file or directory cannot be read or holds no certificate.
        public static let invalidTrustAnchor = Code(rawValue: "invalid-trust-anchor")

        public var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// One sentence for the user.
    public var message: String
    /// The underlying error (a ``CTAP2Error``, a swift-certificates error, ...), where there is one.
    public var underlying: (any Error & Sendable)?
    /// Where the error was made, for debugging (swift-certificates `CertificateError` style).
    public var location: String

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.location = "\(file):\(line)"
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    /// Hashes the code alone, to agree with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String {
        var text = message
        if let underlying { text += " (\(underlying))" }
        return text
    }
}
