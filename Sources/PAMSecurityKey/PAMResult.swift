/// A PAM service module's return value (`<security/_pam_types.h>`), as a PAM stack reads it.
public struct PAMResult: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `PAM_SUCCESS`: the user proved possession of a listed key.
    public static let success = PAMResult(rawValue: 0)
    /// `PAM_SERVICE_ERR`: the PAM line is wrong (an option we refuse), nothing was attempted.
    public static let serviceError = PAMResult(rawValue: 3)
    /// `PAM_SYSTEM_ERR`: the system failed us (no memory, no host name).
    public static let systemError = PAMResult(rawValue: 4)
    /// `PAM_AUTH_ERR`: a wrong key, a refused touch, a wrong PIN, a signature that does not verify.
    public static let authError = PAMResult(rawValue: 7)
    /// `PAM_AUTHINFO_UNAVAIL`: no key present, or the authorization file refused.
    public static let authInfoUnavailable = PAMResult(rawValue: 9)
    /// `PAM_USER_UNKNOWN`: the user has no credential listed (without `nouserok`).
    public static let userUnknown = PAMResult(rawValue: 10)
    /// `PAM_CONV_ERR`: the application's conversation failed.
    public static let conversationError = PAMResult(rawValue: 19)
    /// `PAM_IGNORE`: the user has no credential listed and the line says `nouserok`.
    public static let ignore = PAMResult(rawValue: 25)

    public var description: String {
        switch self {
        case .success: "PAM_SUCCESS"
        case .serviceError: "PAM_SERVICE_ERR"
        case .systemError: "PAM_SYSTEM_ERR"
        case .authError: "PAM_AUTH_ERR"
        case .authInfoUnavailable: "PAM_AUTHINFO_UNAVAIL"
        case .userUnknown: "PAM_USER_UNKNOWN"
        case .conversationError: "PAM_CONV_ERR"
        case .ignore: "PAM_IGNORE"
        default: "PAM result \(rawValue)"
        }
    }
}

/// Why the module ends without success: the result the stack sees and one sentence for the log.
public struct PAMFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// What the stack sees.
    public var result: PAMResult
    /// One sentence for the log (never a PIN or a token).
    public var message: String
    /// Whether a key said it does not hold the credential (nothing was asked of the user, so
    /// another key may be tried).
    var keyLacksCredential = false
    /// Whether the failure is a refusal of what the file or the PAM line asks (not a key's or
    /// the user's answer): logged to syslog as the module's other refusals are.
    public var isRefusal = false

    /// Creates a failure.
    public init(_ result: PAMResult, _ message: String) {
        self.result = result
        self.message = message
    }

    /// Failures are equal when their results are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.result == rhs.result }
    public func hash(into hasher: inout Hasher) { hasher.combine(result) }

    public var description: String { "\(result): \(message)" }
}
