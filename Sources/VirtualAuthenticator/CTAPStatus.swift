/// A CTAP status code, the first byte of every CTAP2 response (CTAP 2.1 §8.2 "Status codes").
///
/// The authenticator side keeps its own copy of the spec's table on purpose: it shares no
/// protocol code with the host so that host and device bugs cannot cancel each other out.
public struct CTAPStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// CTAP1_ERR_SUCCESS / CTAP2_OK.
    public static let ok = CTAPStatus(rawValue: 0x00)
    /// CTAP1_ERR_INVALID_COMMAND: the command is not known.
    public static let invalidCommand = CTAPStatus(rawValue: 0x01)
    /// CTAP1_ERR_INVALID_PARAMETER: a parameter has an invalid value.
    public static let invalidParameter = CTAPStatus(rawValue: 0x02)
    /// CTAP1_ERR_INVALID_LENGTH: a length is out of range.
    public static let invalidLength = CTAPStatus(rawValue: 0x03)
    /// CTAP1_ERR_CHANNEL_BUSY: another transaction is in progress.
    public static let channelBusy = CTAPStatus(rawValue: 0x06)
    /// CTAP2_ERR_CBOR_UNEXPECTED_TYPE: a parameter has the wrong CBOR type.
    public static let cborUnexpectedType = CTAPStatus(rawValue: 0x11)
    /// CTAP2_ERR_INVALID_CBOR: the parameters are not valid CTAP2 canonical CBOR.
    public static let invalidCBOR = CTAPStatus(rawValue: 0x12)
    /// CTAP2_ERR_MISSING_PARAMETER: a required parameter is missing.
    public static let missingParameter = CTAPStatus(rawValue: 0x14)
    /// CTAP2_ERR_LIMIT_EXCEEDED: a list is longer than the authenticator allows.
    public static let limitExceeded = CTAPStatus(rawValue: 0x15)
    /// CTAP2_ERR_CREDENTIAL_EXCLUDED: a credential in the exclude list is present.
    public static let credentialExcluded = CTAPStatus(rawValue: 0x19)
    /// CTAP2_ERR_UNSUPPORTED_ALGORITHM: none of the requested algorithms is supported.
    public static let unsupportedAlgorithm = CTAPStatus(rawValue: 0x26)
    /// CTAP2_ERR_OPERATION_DENIED: the user declined.
    public static let operationDenied = CTAPStatus(rawValue: 0x27)
    /// CTAP2_ERR_KEY_STORE_FULL: no room for another discoverable credential.
    public static let keyStoreFull = CTAPStatus(rawValue: 0x28)
    /// CTAP2_ERR_UNSUPPORTED_OPTION: an option is not supported.
    public static let unsupportedOption = CTAPStatus(rawValue: 0x2B)
    /// CTAP2_ERR_INVALID_OPTION: an option has an invalid value.
    public static let invalidOption = CTAPStatus(rawValue: 0x2C)
    /// CTAP2_ERR_KEEPALIVE_CANCEL: the platform cancelled the request.
    public static let keepaliveCancel = CTAPStatus(rawValue: 0x2D)
    /// CTAP2_ERR_NO_CREDENTIALS: no valid credential was found.
    public static let noCredentials = CTAPStatus(rawValue: 0x2E)
    /// CTAP2_ERR_USER_ACTION_TIMEOUT: the user did not act in time.
    public static let userActionTimeout = CTAPStatus(rawValue: 0x2F)
    /// CTAP2_ERR_NOT_ALLOWED: the command is not allowed now.
    public static let notAllowed = CTAPStatus(rawValue: 0x30)
    /// CTAP2_ERR_PIN_INVALID: the PIN is wrong, or a PIN is set (zero-length pinUvAuthParam probe).
    public static let pinInvalid = CTAPStatus(rawValue: 0x31)
    /// CTAP2_ERR_PIN_BLOCKED: no PIN retries are left; only reset helps.
    public static let pinBlocked = CTAPStatus(rawValue: 0x32)
    /// CTAP2_ERR_PIN_AUTH_INVALID: a pinUvAuthParam does not verify or its token lacks a permission.
    public static let pinAuthInvalid = CTAPStatus(rawValue: 0x33)
    /// CTAP2_ERR_PIN_AUTH_BLOCKED: three wrong PINs in a row; a power cycle is needed.
    public static let pinAuthBlocked = CTAPStatus(rawValue: 0x34)
    /// CTAP2_ERR_PIN_NOT_SET: no PIN or built-in verification is configured.
    public static let pinNotSet = CTAPStatus(rawValue: 0x35)
    /// CTAP2_ERR_PUAT_REQUIRED (CTAP 2.0: PIN_REQUIRED): the request needs a pinUvAuthParam.
    public static let puatRequired = CTAPStatus(rawValue: 0x36)
    /// CTAP2_ERR_PIN_POLICY_VIOLATION: the PIN breaks the policy, or a PIN change is forced.
    public static let pinPolicyViolation = CTAPStatus(rawValue: 0x37)
    /// CTAP2_ERR_REQUEST_TOO_LARGE: the request exceeds what the authenticator can handle.
    public static let requestTooLarge = CTAPStatus(rawValue: 0x39)
    /// CTAP2_ERR_UV_BLOCKED: built-in user verification has no retries left.
    public static let uvBlocked = CTAPStatus(rawValue: 0x3C)
    /// CTAP2_ERR_INVALID_SUBCOMMAND: the subcommand is not known.
    public static let invalidSubcommand = CTAPStatus(rawValue: 0x3E)
    /// CTAP2_ERR_UV_INVALID: built-in user verification did not match.
    public static let uvInvalid = CTAPStatus(rawValue: 0x3F)
    /// CTAP2_ERR_UNAUTHORIZED_PERMISSION: a requested permission is not supported.
    public static let unauthorizedPermission = CTAPStatus(rawValue: 0x40)
    /// CTAP1_ERR_OTHER: an unspecified error.
    public static let other = CTAPStatus(rawValue: 0x7F)

    public var description: String {
        "0x" + (rawValue < 0x10 ? "0" : "") + String(rawValue, radix: 16)
    }
}
