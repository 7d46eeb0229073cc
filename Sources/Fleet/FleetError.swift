/// The one error type of the Fleet module: a stable code and one sentence for the user.
/// Equal (and hashed) by code alone.
public struct FleetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable, switchable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's stable text.
        public var rawValue: String
        /// Creates a code from its stable text.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A policy file that cannot be read or is not a policy.
        public static let invalidPolicy = Code(rawValue: "invalid-policy")
        /// The metrics file cannot be written.
        public static let outputUnwritable = Code(rawValue: "output-unwritable")

        public var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// One sentence for the user.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func == (lhs: FleetError, rhs: FleetError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
