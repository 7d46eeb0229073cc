/// The one error type of the benchmark: a stable code and one sentence.
struct BenchError: Error, Sendable, CustomStringConvertible {
    /// Stable error codes.
    struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        var rawValue: String
        init(rawValue: String) { self.rawValue = rawValue }

        /// The command line is wrong.
        static let usage = Code(rawValue: "usage")
        /// The device could not be opened or an operation on it failed.
        static let device = Code(rawValue: "device")
        /// A child process (a driver, a virtual key) misbehaved or could not start.
        static let child = Code(rawValue: "child")
        /// A deadline passed.
        static let timeout = Code(rawValue: "timeout")
        /// A system call failed.
        static let system = Code(rawValue: "system")

        var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
    var code: Code
    /// One sentence for the user.
    var message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }
}
