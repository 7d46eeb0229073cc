/// The one error type of the CBOR module: a stable code, a sentence, and where in the input.
public struct CBORError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Stable, switchable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The stable text of the code, e.g. `truncated`.
        public var rawValue: String
        /// Creates a code from its stable text.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The input ended inside a data item.
        public static let truncated = Code(rawValue: "truncated")
        /// Bytes follow the single top-level item.
        public static let trailingBytes = Code(rawValue: "trailing-bytes")
        /// Additional information 28, 29 or 30, or 31 where no indefinite length is allowed.
        public static let reservedAdditionalInformation = Code(rawValue: "reserved-additional-information")
        /// An indefinite-length item where CTAP2 forbids them.
        public static let indefiniteLength = Code(rawValue: "indefinite-length")
        /// An integer, length or tag not in its shortest form, a float not in the shortest form
        /// that keeps its value, or a NaN other than `f97e00`.
        public static let nonCanonicalEncoding = Code(rawValue: "non-canonical-encoding")
        /// A map has the same key twice.
        public static let duplicateMapKey = Code(rawValue: "duplicate-map-key")
        /// Map keys are not in CTAP2 canonical order.
        public static let mapKeyOrder = Code(rawValue: "map-key-order")
        /// A text string is not valid UTF-8.
        public static let invalidUTF8 = Code(rawValue: "invalid-utf8")
        /// Nesting deeper than the configured limit.
        public static let depthExceeded = Code(rawValue: "depth-exceeded")
        /// The input is larger than the configured limit.
        public static let inputTooLarge = Code(rawValue: "input-too-large")
        /// A declared length or count exceeds what the remaining input could hold.
        public static let lengthExceedsInput = Code(rawValue: "length-exceeds-input")
        /// A "break" byte outside an indefinite-length item.
        public static let unexpectedBreak = Code(rawValue: "unexpected-break")
        /// A chunk of an indefinite-length string has the wrong major type or is itself indefinite.
        public static let invalidChunk = Code(rawValue: "invalid-chunk")
        /// A two-byte simple value below 32 (RFC 8949 §3.3).
        public static let invalidSimpleValue = Code(rawValue: "invalid-simple-value")
        /// A tag where the options forbid them (CTAP2 messages contain none).
        public static let tagNotAllowed = Code(rawValue: "tag-not-allowed")
        /// Tag 0, 1, 2 or 3 around content of the wrong type (RFC 8949 §3.4).
        public static let invalidTagContent = Code(rawValue: "invalid-tag-content")
        /// The value cannot be encoded (for example a CTAP2 message nested too deep).
        public static let unencodable = Code(rawValue: "unencodable")

        /// The stable text of the code.
        public var description: String { rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// Byte offset in the input where it was found.
    public var offset: Int
    /// One sentence for the user.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, at offset: Int, _ message: String) {
        self.code = code
        self.offset = offset
        self.message = message
    }

    /// The message with the offset it refers to.
    public var description: String { "\(message) (at byte \(offset))" }
}
