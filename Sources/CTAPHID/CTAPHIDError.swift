/// The one error type of the CTAPHID framing module: a stable code and one sentence.
public struct CTAPHIDError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable, switchable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A report is shorter than a CTAPHID header or than the report size.
        public static let truncatedReport = Code(rawValue: "truncated-report")
        /// A report is not a valid CTAPHID packet here (wrong kind, bad field).
        public static let malformedPacket = Code(rawValue: "malformed-packet")
        /// A continuation packet's sequence number is not the expected one.
        public static let invalidSequence = Code(rawValue: "invalid-sequence")
        /// An initialization packet arrived in the middle of a message.
        public static let unexpectedInitialization = Code(rawValue: "unexpected-initialization")
        /// A declared or given message length exceeds what the report size allows.
        public static let messageTooLarge = Code(rawValue: "message-too-large")
        /// A message's payload does not have the layout its command requires.
        public static let malformedMessage = Code(rawValue: "malformed-message")
        /// The report size is outside what CTAPHID supports.
        public static let invalidReportSize = Code(rawValue: "invalid-report-size")
        /// The device answered with CTAPHID_ERROR; see ``CTAPHIDError/deviceError``.
        public static let deviceError = Code(rawValue: "device-error")
        /// A HID report descriptor does not describe a FIDO CTAPHID interface.
        public static let invalidReportDescriptor = Code(rawValue: "invalid-report-descriptor")

        public var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// One sentence for the user.
    public var message: String
    /// For ``Code/deviceError``, the error byte the device sent.
    public var deviceError: CTAPHIDErrorCode?

    /// Creates an error.
    public init(_ code: Code, _ message: String, deviceError: CTAPHIDErrorCode? = nil) {
        self.code = code
        self.message = message
        self.deviceError = deviceError
    }

    /// The error for a CTAPHID_ERROR message carrying `code`.
    public static func device(_ code: CTAPHIDErrorCode) -> CTAPHIDError {
        CTAPHIDError(.deviceError, "The security key reported a CTAPHID error: \(code).", deviceError: code)
    }

    public var description: String { message }
}
