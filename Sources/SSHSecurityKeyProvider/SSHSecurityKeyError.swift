import Authenticators
import CTAP2

/// Why an OpenSSH security-key operation failed, as a condition OpenSSH knows (its
/// `SSH_SK_ERR_*` results) and one sentence for the user.
public struct SSHSecurityKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The condition, as OpenSSH's middleware API names it (PROTOCOL.u2f, sk-api.h).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The API's result value (negative).
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// `SSH_SK_ERR_GENERAL`: anything else.
        public static let general = Code(rawValue: -1)
        /// `SSH_SK_ERR_UNSUPPORTED`: the key lacks the algorithm or a feature the flags need.
        public static let unsupported = Code(rawValue: -2)
        /// `SSH_SK_ERR_PIN_REQUIRED`: the key needs a PIN and none (or a wrong one) was given;
        /// OpenSSH then asks the user and calls again.
        public static let pinRequired = Code(rawValue: -3)
        /// `SSH_SK_ERR_DEVICE_NOT_FOUND`: no key, or none holding the key handle.
        public static let deviceNotFound = Code(rawValue: -4)
        /// `SSH_SK_ERR_CREDENTIAL_EXISTS`: a resident key for this application and user exists.
        public static let credentialExists = Code(rawValue: -5)

        public var description: String {
            switch self {
            case .general: "general"
            case .unsupported: "unsupported"
            case .pinRequired: "pin-required"
            case .deviceNotFound: "device-not-found"
            case .credentialExists: "credential-exists"
            default: "sk-error(\(rawValue))"
            }
        }
    }

    /// The condition.
    public var code: Code
    /// One sentence for the user.
    public var message: String
    /// The device layer's failure underneath, where there is one.
    public var underlying: AuthenticatorError?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: AuthenticatorError? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// A device-layer failure as OpenSSH's built-in provider reports the same CTAP status: a
    /// missing, wrong or refused PIN is `pinRequired` (OpenSSH asks the user again), an
    /// algorithm, option or extension the key lacks is `unsupported`, no key is
    /// `deviceNotFound`, everything else `general`.
    public init(_ error: AuthenticatorError) {
        let code: Code
        switch error.code {
        case .noDevice, .removed: code = .deviceNotFound
        case .notInteractive, .operationDenied, Self.pinRequiredCode, Self.pinInvalidCode: code = .pinRequired
        case Self.unsupportedAlgorithmCode, Self.unsupportedOptionCode, Self.unsupportedExtensionCode, .notSupported,
            .pinUVNotSupported:
            code = .unsupported
        default: code = .general
        }
        self.init(code, error.message, underlying: error)
    }

    private static let pinRequiredCode = AuthenticatorError.Code(rawValue: CTAP2Error.Code.pinRequired.rawValue)
    private static let pinInvalidCode = AuthenticatorError.Code(rawValue: CTAP2Error.Code.pinInvalid.rawValue)
    private static let unsupportedAlgorithmCode = AuthenticatorError.Code(
        rawValue: CTAP2Error.Code.unsupportedAlgorithm.rawValue)
    private static let unsupportedOptionCode = AuthenticatorError.Code(
        rawValue: CTAP2Error.Code.unsupportedOption.rawValue)
    private static let unsupportedExtensionCode = AuthenticatorError.Code(
        rawValue: CTAP2Error.Code.unsupportedExtension.rawValue)

    /// A CTAP2 failure from a command this module sent itself.
    init(_ error: CTAP2Error, deviceURI: String) {
        self.init(AuthenticatorError(error, deviceURI: deviceURI))
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String { message }
}
