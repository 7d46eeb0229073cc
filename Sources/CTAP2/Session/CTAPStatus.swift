/// A CTAP status code: the first byte of every authenticator reply (CTAP 2.1 §8.2 "Status codes").
///
/// Unknown codes are kept as they are; the extension range (0xE0...0xEF) and the vendor range
/// (0xF0...0xFF) are recognised by ``isExtensionSpecific`` and ``isVendorSpecific``.
public struct CTAPStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The status byte.
    public var rawValue: UInt8
    /// Creates a status from its byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// CTAP2_OK: the command succeeded.
    public static let ok = CTAPStatus(rawValue: 0x00)
    /// CTAP1_ERR_INVALID_COMMAND.
    public static let invalidCommand = CTAPStatus(rawValue: 0x01)
    /// CTAP1_ERR_INVALID_PARAMETER.
    public static let invalidParameter = CTAPStatus(rawValue: 0x02)
    /// CTAP1_ERR_INVALID_LENGTH.
    public static let invalidLength = CTAPStatus(rawValue: 0x03)
    /// CTAP1_ERR_INVALID_SEQ.
    public static let invalidSequence = CTAPStatus(rawValue: 0x04)
    /// CTAP1_ERR_TIMEOUT.
    public static let timeout = CTAPStatus(rawValue: 0x05)
    /// CTAP1_ERR_CHANNEL_BUSY.
    public static let channelBusy = CTAPStatus(rawValue: 0x06)
    /// CTAP1_ERR_LOCK_REQUIRED.
    public static let lockRequired = CTAPStatus(rawValue: 0x0A)
    /// CTAP1_ERR_INVALID_CHANNEL.
    public static let invalidChannel = CTAPStatus(rawValue: 0x0B)
    /// CTAP2_ERR_CBOR_UNEXPECTED_TYPE.
    public static let cborUnexpectedType = CTAPStatus(rawValue: 0x11)
    /// CTAP2_ERR_INVALID_CBOR.
    public static let invalidCBOR = CTAPStatus(rawValue: 0x12)
    /// CTAP2_ERR_MISSING_PARAMETER.
    public static let missingParameter = CTAPStatus(rawValue: 0x14)
    /// CTAP2_ERR_LIMIT_EXCEEDED.
    public static let limitExceeded = CTAPStatus(rawValue: 0x15)
    /// CTAP2_ERR_UNSUPPORTED_EXTENSION (CTAP 2.0; reserved in 2.1).
    public static let unsupportedExtension = CTAPStatus(rawValue: 0x16)
    /// CTAP2_ERR_FP_DATABASE_FULL.
    public static let fingerprintDatabaseFull = CTAPStatus(rawValue: 0x17)
    /// CTAP2_ERR_LARGE_BLOB_STORAGE_FULL.
    public static let largeBlobStorageFull = CTAPStatus(rawValue: 0x18)
    /// CTAP2_ERR_CREDENTIAL_EXCLUDED.
    public static let credentialExcluded = CTAPStatus(rawValue: 0x19)
    /// CTAP2_ERR_PROCESSING.
    public static let processing = CTAPStatus(rawValue: 0x21)
    /// CTAP2_ERR_INVALID_CREDENTIAL.
    public static let invalidCredential = CTAPStatus(rawValue: 0x22)
    /// CTAP2_ERR_USER_ACTION_PENDING.
    public static let userActionPending = CTAPStatus(rawValue: 0x23)
    /// CTAP2_ERR_OPERATION_PENDING.
    public static let operationPending = CTAPStatus(rawValue: 0x24)
    /// CTAP2_ERR_NO_OPERATIONS.
    public static let noOperations = CTAPStatus(rawValue: 0x25)
    /// CTAP2_ERR_UNSUPPORTED_ALGORITHM.
    public static let unsupportedAlgorithm = CTAPStatus(rawValue: 0x26)
    /// CTAP2_ERR_OPERATION_DENIED.
    public static let operationDenied = CTAPStatus(rawValue: 0x27)
    /// CTAP2_ERR_KEY_STORE_FULL.
    public static let keyStoreFull = CTAPStatus(rawValue: 0x28)
    /// CTAP2_ERR_NOT_BUSY (CTAP 2.0; reserved in 2.1).
    public static let notBusy = CTAPStatus(rawValue: 0x29)
    /// CTAP2_ERR_NO_OPERATION_PENDING (CTAP 2.0; reserved in 2.1).
    public static let noOperationPending = CTAPStatus(rawValue: 0x2A)
    /// CTAP2_ERR_UNSUPPORTED_OPTION.
    public static let unsupportedOption = CTAPStatus(rawValue: 0x2B)
    /// CTAP2_ERR_INVALID_OPTION.
    public static let invalidOption = CTAPStatus(rawValue: 0x2C)
    /// CTAP2_ERR_KEEPALIVE_CANCEL.
    public static let keepaliveCancel = CTAPStatus(rawValue: 0x2D)
    /// CTAP2_ERR_NO_CREDENTIALS.
    public static let noCredentials = CTAPStatus(rawValue: 0x2E)
    /// CTAP2_ERR_USER_ACTION_TIMEOUT.
    public static let userActionTimeout = CTAPStatus(rawValue: 0x2F)
    /// CTAP2_ERR_NOT_ALLOWED.
    public static let notAllowed = CTAPStatus(rawValue: 0x30)
    /// CTAP2_ERR_PIN_INVALID.
    public static let pinInvalid = CTAPStatus(rawValue: 0x31)
    /// CTAP2_ERR_PIN_BLOCKED.
    public static let pinBlocked = CTAPStatus(rawValue: 0x32)
    /// CTAP2_ERR_PIN_AUTH_INVALID.
    public static let pinAuthInvalid = CTAPStatus(rawValue: 0x33)
    /// CTAP2_ERR_PIN_AUTH_BLOCKED.
    public static let pinAuthBlocked = CTAPStatus(rawValue: 0x34)
    /// CTAP2_ERR_PIN_NOT_SET.
    public static let pinNotSet = CTAPStatus(rawValue: 0x35)
    /// CTAP2_ERR_PUAT_REQUIRED (CTAP 2.0: CTAP2_ERR_PIN_REQUIRED).
    public static let pinUvAuthTokenRequired = CTAPStatus(rawValue: 0x36)
    /// CTAP2_ERR_PIN_POLICY_VIOLATION.
    public static let pinPolicyViolation = CTAPStatus(rawValue: 0x37)
    /// CTAP2_ERR_PIN_TOKEN_EXPIRED (CTAP 2.0; reserved in 2.1).
    public static let pinTokenExpired = CTAPStatus(rawValue: 0x38)
    /// CTAP2_ERR_REQUEST_TOO_LARGE.
    public static let requestTooLarge = CTAPStatus(rawValue: 0x39)
    /// CTAP2_ERR_ACTION_TIMEOUT.
    public static let actionTimeout = CTAPStatus(rawValue: 0x3A)
    /// CTAP2_ERR_UP_REQUIRED.
    public static let userPresenceRequired = CTAPStatus(rawValue: 0x3B)
    /// CTAP2_ERR_UV_BLOCKED.
    public static let uvBlocked = CTAPStatus(rawValue: 0x3C)
    /// CTAP2_ERR_INTEGRITY_FAILURE.
    public static let integrityFailure = CTAPStatus(rawValue: 0x3D)
    /// CTAP2_ERR_INVALID_SUBCOMMAND.
    public static let invalidSubcommand = CTAPStatus(rawValue: 0x3E)
    /// CTAP2_ERR_UV_INVALID.
    public static let uvInvalid = CTAPStatus(rawValue: 0x3F)
    /// CTAP2_ERR_UNAUTHORIZED_PERMISSION.
    public static let unauthorizedPermission = CTAPStatus(rawValue: 0x40)
    /// CTAP1_ERR_OTHER.
    public static let other = CTAPStatus(rawValue: 0x7F)
    /// CTAP2_ERR_SPEC_LAST: the last code the specification may assign.
    public static let specLast = CTAPStatus(rawValue: 0xDF)
    /// CTAP2_ERR_EXTENSION_FIRST.
    public static let extensionFirst = CTAPStatus(rawValue: 0xE0)
    /// CTAP2_ERR_EXTENSION_LAST.
    public static let extensionLast = CTAPStatus(rawValue: 0xEF)
    /// CTAP2_ERR_VENDOR_FIRST.
    public static let vendorFirst = CTAPStatus(rawValue: 0xF0)
    /// CTAP2_ERR_VENDOR_LAST.
    public static let vendorLast = CTAPStatus(rawValue: 0xFF)

    /// Whether the code lies in the extension-specific range (0xE0...0xEF).
    public var isExtensionSpecific: Bool { (0xE0...0xEF).contains(rawValue) }
    /// Whether the code lies in the vendor-specific range (0xF0...0xFF).
    public var isVendorSpecific: Bool { rawValue >= 0xF0 }

    /// The specification's name and a sentence for each named code.
    private static let table: [UInt8: (name: String, message: String)] = [
        0x00: ("CTAP2_OK", "The command succeeded."),
        0x01: ("CTAP1_ERR_INVALID_COMMAND", "The authenticator does not know this command."),
        0x02: ("CTAP1_ERR_INVALID_PARAMETER", "The authenticator rejected a parameter of the command."),
        0x03: ("CTAP1_ERR_INVALID_LENGTH", "The authenticator rejected the length of the message."),
        0x04: ("CTAP1_ERR_INVALID_SEQ", "The authenticator received message fragments out of sequence."),
        0x05: ("CTAP1_ERR_TIMEOUT", "The authenticator timed out waiting for the rest of the message."),
        0x06: ("CTAP1_ERR_CHANNEL_BUSY", "The authenticator is busy with another channel."),
        0x0A: ("CTAP1_ERR_LOCK_REQUIRED", "The command requires a channel lock."),
        0x0B: ("CTAP1_ERR_INVALID_CHANNEL", "The channel identifier is not valid."),
        0x11: ("CTAP2_ERR_CBOR_UNEXPECTED_TYPE", "A parameter of the command has the wrong CBOR type."),
        0x12: ("CTAP2_ERR_INVALID_CBOR", "The command's CBOR is not valid."),
        0x14: ("CTAP2_ERR_MISSING_PARAMETER", "A required parameter of the command is missing."),
        0x15: ("CTAP2_ERR_LIMIT_EXCEEDED", "A limit of the authenticator was exceeded."),
        0x16: (
            "CTAP2_ERR_UNSUPPORTED_EXTENSION", "The authenticator does not support a requested extension."
        ),
        0x17: ("CTAP2_ERR_FP_DATABASE_FULL", "The authenticator's fingerprint storage is full."),
        0x18: ("CTAP2_ERR_LARGE_BLOB_STORAGE_FULL", "The authenticator's large-blob storage is full."),
        0x19: (
            "CTAP2_ERR_CREDENTIAL_EXCLUDED",
            "A credential on the exclude list is already registered on this key."
        ),
        0x21: ("CTAP2_ERR_PROCESSING", "The authenticator is still processing the request."),
        0x22: ("CTAP2_ERR_INVALID_CREDENTIAL", "The credential is not valid for this authenticator."),
        0x23: ("CTAP2_ERR_USER_ACTION_PENDING", "The authenticator is waiting for the user to act."),
        0x24: ("CTAP2_ERR_OPERATION_PENDING", "Another operation is still pending on the authenticator."),
        0x25: ("CTAP2_ERR_NO_OPERATIONS", "There is no operation to continue."),
        0x26: (
            "CTAP2_ERR_UNSUPPORTED_ALGORITHM", "The authenticator supports none of the requested algorithms."
        ),
        0x27: ("CTAP2_ERR_OPERATION_DENIED", "The authenticator denied the operation."),
        0x28: (
            "CTAP2_ERR_KEY_STORE_FULL", "The authenticator has no room for another discoverable credential."
        ),
        0x29: ("CTAP2_ERR_NOT_BUSY", "The authenticator is not busy."),
        0x2A: ("CTAP2_ERR_NO_OPERATION_PENDING", "No operation is pending on the authenticator."),
        0x2B: ("CTAP2_ERR_UNSUPPORTED_OPTION", "The authenticator does not support a requested option."),
        0x2C: ("CTAP2_ERR_INVALID_OPTION", "A requested option is not valid for this command."),
        0x2D: ("CTAP2_ERR_KEEPALIVE_CANCEL", "The operation was cancelled."),
        0x2E: ("CTAP2_ERR_NO_CREDENTIALS", "The authenticator holds no matching credential."),
        0x2F: ("CTAP2_ERR_USER_ACTION_TIMEOUT", "The user did not touch the key in time."),
        0x30: ("CTAP2_ERR_NOT_ALLOWED", "The authenticator does not allow this command now."),
        0x31: ("CTAP2_ERR_PIN_INVALID", "The PIN is wrong."),
        0x32: ("CTAP2_ERR_PIN_BLOCKED", "The PIN is blocked; the key must be reset."),
        0x33: ("CTAP2_ERR_PIN_AUTH_INVALID", "The PIN/UV authentication parameter did not verify."),
        0x34: (
            "CTAP2_ERR_PIN_AUTH_BLOCKED", "Too many wrong PINs; remove and reinsert the key to try again."
        ),
        0x35: ("CTAP2_ERR_PIN_NOT_SET", "No PIN is set on the key."),
        0x36: ("CTAP2_ERR_PUAT_REQUIRED", "This operation needs a PIN or user verification."),
        0x37: ("CTAP2_ERR_PIN_POLICY_VIOLATION", "The new PIN does not meet the key's PIN policy."),
        0x38: ("CTAP2_ERR_PIN_TOKEN_EXPIRED", "The PIN token has expired."),
        0x39: ("CTAP2_ERR_REQUEST_TOO_LARGE", "The request is larger than the authenticator accepts."),
        0x3A: ("CTAP2_ERR_ACTION_TIMEOUT", "The authenticator timed out waiting for the action to finish."),
        0x3B: ("CTAP2_ERR_UP_REQUIRED", "This operation needs user presence (a touch)."),
        0x3C: ("CTAP2_ERR_UV_BLOCKED", "Built-in user verification is blocked; use the PIN."),
        0x3D: ("CTAP2_ERR_INTEGRITY_FAILURE", "The authenticator found an integrity failure in stored data."),
        0x3E: ("CTAP2_ERR_INVALID_SUBCOMMAND", "The authenticator does not know this subcommand."),
        0x3F: ("CTAP2_ERR_UV_INVALID", "Built-in user verification failed."),
        0x40: (
            "CTAP2_ERR_UNAUTHORIZED_PERMISSION", "The PIN/UV token lacks the permission this command needs."
        ),
        0x7F: ("CTAP1_ERR_OTHER", "The authenticator reported an unspecified error."),
        0xDF: ("CTAP2_ERR_SPEC_LAST", "The authenticator reported a reserved status code."),
        0xE0: ("CTAP2_ERR_EXTENSION_FIRST", "An extension failed on the authenticator (status 0xE0)."),
        0xEF: ("CTAP2_ERR_EXTENSION_LAST", "An extension failed on the authenticator (status 0xEF)."),
        0xF0: ("CTAP2_ERR_VENDOR_FIRST", "The authenticator reported a vendor-specific error (status 0xF0)."),
        0xFF: ("CTAP2_ERR_VENDOR_LAST", "The authenticator reported a vendor-specific error (status 0xFF)."),
    ]

    /// The specification's name (`CTAP2_ERR_PIN_INVALID`), or a descriptive name for
    /// extension, vendor and unassigned codes.
    public var name: String {
        if let entry = Self.table[rawValue] { return entry.name }
        let hex = "0x" + String(rawValue, radix: 16, uppercase: true)
        if isExtensionSpecific { return "CTAP2_ERR_EXTENSION_\(hex)" }
        if isVendorSpecific { return "CTAP2_ERR_VENDOR_\(hex)" }
        return "CTAP_STATUS_\(hex)"
    }

    /// One sentence for the user.
    public var message: String {
        if let entry = Self.table[rawValue] { return entry.message }
        let hex = "0x" + String(rawValue, radix: 16, uppercase: true)
        if isExtensionSpecific { return "An extension failed on the authenticator (status \(hex))." }
        if isVendorSpecific { return "The authenticator reported a vendor-specific error (status \(hex))." }
        return "The authenticator reported an unknown error (status \(hex))."
    }

    public var description: String { name }
}
