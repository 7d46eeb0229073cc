/// The one error type of every transport: a stable code, a sentence for the user, and the
/// underlying error where there is one.
///
/// Two errors are equal when their codes are; the message, the underlying error and where the
/// error was made (``file``, ``line``) are for people, not for matching.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
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
    /// The source file that made the error (`#fileID`).
    public var file: String
    /// The line that made the error.
    public var line: Int

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.file = file
        self.line = line
    }

    /// No device answers, or it went away.
    public static func noDevice(_ message: String, file: String = #fileID, line: Int = #line)
        -> TransportError
    {
        TransportError(.noDevice, message, file: file, line: line)
    }

    /// The deadline passed.
    public static func timeout(_ message: String, file: String = #fileID, line: Int = #line) -> TransportError
    {
        TransportError(.timeout, message, file: file, line: line)
    }

    /// The caller cancelled.
    public static func cancelled(_ message: String, file: String = #fileID, line: Int = #line)
        -> TransportError
    {
        TransportError(.cancelled, message, file: file, line: line)
    }

    /// The connection was closed.
    public static func closed(_ message: String, file: String = #fileID, line: Int = #line) -> TransportError
    {
        TransportError(.closed, message, file: file, line: line)
    }

    /// The device broke the transport's framing rules.
    public static func malformedResponse(
        _ message: String, underlying: (any Error & Sendable)? = nil, file: String = #fileID,
        line: Int = #line
    ) -> TransportError {
        TransportError(.malformedResponse, message, underlying: underlying, file: file, line: line)
    }

    /// A system or C library call failed.
    public static func system(
        _ message: String, underlying: (any Error & Sendable)? = nil, file: String = #fileID,
        line: Int = #line
    ) -> TransportError {
        TransportError(.system, message, underlying: underlying, file: file, line: line)
    }

    /// Equal when the codes are.
    public static func == (lhs: TransportError, rhs: TransportError) -> Bool { lhs.code == rhs.code }

    /// Hashes the code, as ``==`` compares it.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String {
        if let underlying { return "\(message) (\(underlying))" }
        return message
    }
}
