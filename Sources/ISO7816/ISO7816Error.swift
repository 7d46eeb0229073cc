/// The one error type of the ISO7816 module: a stable code and a sentence for the user.
public struct ISO7816Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable, switchable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A response is shorter than its two status-word bytes.
        public static let truncatedResponse = Code(rawValue: "truncated-response")
        /// A command APDU's bytes do not follow ISO 7816-4 §5.1 encoding.
        public static let malformedCommand = Code(rawValue: "malformed-command")
        /// A command carries more data, or expects more, than the chosen form allows.
        public static let tooLong = Code(rawValue: "too-long")
        /// A card kept asking for GET RESPONSE or a new Le past any sensible bound.
        public static let tooManyRounds = Code(rawValue: "too-many-rounds")

        public var description: String { rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// One sentence for the user.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
