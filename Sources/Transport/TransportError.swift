/// The one error type of every transport: a stable code, a sentence for the user, and the
/// underlying error where there is one.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    /// Stable, switchable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// No device answers at that URI, or it went away.
        public static let noDevice = Code(rawValue: "no-device")
        /// The device node exists but this user may not open it.
        public static let permissionDenied = Code(rawValue: "permission-denied")
        /// Another process holds the device.
        public static let busy = Code(rawValue: "busy")
        /// The deadline passed.
        public static let timeout = Code(rawValue: "timeout")
        /// The operation was cancelled by the caller.
        public static let cancelled = Code(rawValue: "cancelled")
        /// The device sent something that breaks the transport's framing rules.
        public static let malformedResponse = Code(rawValue: "malformed-response")
        /// The device reported a transport-level error.
        public static let deviceError = Code(rawValue: "device-error")
        /// A message is larger than the transport or device allows.
        public static let messageTooLarge = Code(rawValue: "message-too-large")
        /// The transport cannot do what was asked.
        public static let notSupported = Code(rawValue: "not-supported")
        /// The connection was closed.
        public static let closed = Code(rawValue: "closed")
        /// A system call or C library call failed.
        public static let system = Code(rawValue: "system")
        /// The URI is not one this transport understands.
        public static let invalidURI = Code(rawValue: "invalid-uri")

        public var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
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

    public var description: String {
        if let underlying { return "\(message) (\(underlying))" }
        return message
    }
}
