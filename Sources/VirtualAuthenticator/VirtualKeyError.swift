/// The one error type of the virtual authenticator: a stable code, one sentence, and, for a
/// rejected CTAP request, the status the authenticator answers with.
public struct VirtualKeyError: Error, Sendable, CustomStringConvertible {
    /// Stable, switchable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The state file cannot be read, written or renamed.
        public static let stateFileIO = Code(rawValue: "state-file-io")
        /// The state file is not a virtual authenticator state file (wrong magic).
        public static let stateFileForeign = Code(rawValue: "state-file-foreign")
        /// Another virtual key (in this or another process) holds the state file.
        public static let stateFileInUse = Code(rawValue: "state-file-in-use")
        /// The state file has the right magic but its content is damaged.
        public static let stateFileCorrupt = Code(rawValue: "state-file-corrupt")
        /// The state file was written by a newer, unknown format version.
        public static let stateFileVersion = Code(rawValue: "state-file-version")
        /// The state file does not match the configuration (for example another AAGUID).
        public static let stateMismatch = Code(rawValue: "state-mismatch")
        /// The configuration is not usable.
        public static let invalidConfiguration = Code(rawValue: "invalid-configuration")
        /// A key or certificate could not be created.
        public static let crypto = Code(rawValue: "crypto")
        /// A served key's device did not appear to hosts (uhid: no hidraw node came).
        public static let noDevice = Code(rawValue: "no-device")
        /// A CTAP request was rejected; ``VirtualKeyError/status`` holds the answer.
        public static let requestRejected = Code(rawValue: "request-rejected")

        public var description: String { rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// One sentence for the user.
    public var message: String
    /// For ``Code/requestRejected``, the CTAP status sent back to the platform.
    public var status: CTAPStatus?
    /// The underlying error, where there is one.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, status: CTAPStatus? = nil, underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.underlying = underlying
    }

    /// A rejected request answering `status`.
    static func rejected(_ status: CTAPStatus, _ message: String) -> VirtualKeyError {
        VirtualKeyError(.requestRejected, message, status: status)
    }

    public var description: String {
        var text = message
        if let status { text += " (CTAP status \(status))" }
        if let underlying { text += " (\(underlying))" }
        return text
    }
}
