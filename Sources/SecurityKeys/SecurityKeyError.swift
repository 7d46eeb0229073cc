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
