/// What kind of failure an error is, the same across every layer's error type: the one
/// classification a program's caller acts on (the CLI turns it into its documented exit
/// status). Each module's error type says its own category (`category`), beside its codes; an
/// error wrapping another layer's takes that error's category.
public struct FailureCategory: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Any failure not listed below (a device error, a malformed input or reply).
    public static let failure = FailureCategory(rawValue: "failure")
    /// A signature or attestation did not verify.
    public static let verificationFailed = FailureCategory(rawValue: "verification-failed")
    /// No security key was found, or the one named is not there.
    public static let noDevice = FailureCategory(rawValue: "no-device")
    /// The operation was cancelled, timed out, or the user declined on the key.
    public static let cancelled = FailureCategory(rawValue: "cancelled")
    /// The PIN is wrong, blocked, not set, or breaks the key's PIN rules.
    public static let pinProblem = FailureCategory(rawValue: "pin-problem")
    /// The key or its transport cannot do what was asked.
    public static let notSupported = FailureCategory(rawValue: "not-supported")
    /// What the caller asked for is malformed (a bad URI, origin or option).
    public static let usage = FailureCategory(rawValue: "usage")

    public var description: String { rawValue }
}

extension TransportError {
    /// The kind of failure: a missing device, a timeout or cancellation, an unsupported request.
    public var category: FailureCategory {
        switch code {
        case .noDevice: .noDevice
        case .invalidURI: .usage
        case .timeout, .cancelled: .cancelled
        case .notSupported: .notSupported
        default: .failure
        }
    }
}
