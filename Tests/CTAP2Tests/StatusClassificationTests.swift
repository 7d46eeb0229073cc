import Testing
import Transport

@testable import CTAP2

/// The one table that turns an authenticator status into a ``CTAP2Error/Code``. The status bytes
/// here are typed in from the CTAP 2.1 specification's status code table (§8.2), not taken from
/// ``CTAPStatus``'s constants, so a wrong constant or a wrong row fails.
@Suite struct StatusClassificationTests {
    static let specTable: [(byte: UInt8, specName: String, code: CTAP2Error.Code)] = [
        (0x01, "CTAP1_ERR_INVALID_COMMAND", .invalidCommand),
        (0x02, "CTAP1_ERR_INVALID_PARAMETER", .authenticatorStatus),
        (0x05, "CTAP1_ERR_TIMEOUT", .messageTimeout),
        (0x12, "CTAP2_ERR_INVALID_CBOR", .authenticatorStatus),
        (0x16, "CTAP2_ERR_UNSUPPORTED_EXTENSION", .unsupportedExtension),
        (0x19, "CTAP2_ERR_CREDENTIAL_EXCLUDED", .credentialExcluded),
        (0x26, "CTAP2_ERR_UNSUPPORTED_ALGORITHM", .unsupportedAlgorithm),
        (0x27, "CTAP2_ERR_OPERATION_DENIED", .operationDenied),
        (0x28, "CTAP2_ERR_KEY_STORE_FULL", .authenticatorStatus),
        (0x2B, "CTAP2_ERR_UNSUPPORTED_OPTION", .unsupportedOption),
        (0x2D, "CTAP2_ERR_KEEPALIVE_CANCEL", .keepaliveCancel),
        (0x2E, "CTAP2_ERR_NO_CREDENTIALS", .noCredentials),
        (0x2F, "CTAP2_ERR_USER_ACTION_TIMEOUT", .userActionTimeout),
        (0x30, "CTAP2_ERR_NOT_ALLOWED", .notAllowed),
        (0x31, "CTAP2_ERR_PIN_INVALID", .pinInvalid),
        (0x32, "CTAP2_ERR_PIN_BLOCKED", .pinBlocked),
        (0x33, "CTAP2_ERR_PIN_AUTH_INVALID", .pinAuthInvalid),
        (0x34, "CTAP2_ERR_PIN_AUTH_BLOCKED", .pinAuthBlocked),
        (0x35, "CTAP2_ERR_PIN_NOT_SET", .pinNotSet),
        (0x36, "CTAP2_ERR_PUAT_REQUIRED", .pinRequired),
        (0x37, "CTAP2_ERR_PIN_POLICY_VIOLATION", .pinPolicyViolation),
        (0x38, "CTAP2_ERR_PIN_TOKEN_EXPIRED", .pinTokenExpired),
        (0x3A, "CTAP2_ERR_ACTION_TIMEOUT", .userActionTimeout),
        (0x3B, "CTAP2_ERR_UP_REQUIRED", .authenticatorStatus),
        (0x3C, "CTAP2_ERR_UV_BLOCKED", .uvBlocked),
        (0x3F, "CTAP2_ERR_UV_INVALID", .uvInvalid),
        (0x40, "CTAP2_ERR_UNAUTHORIZED_PERMISSION", .unauthorizedPermission),
        (0x7F, "CTAP1_ERR_OTHER", .authenticatorStatus),
        (0xE3, "CTAP2_ERR_EXTENSION_0xE3", .authenticatorStatus),
        (0xF3, "CTAP2_ERR_VENDOR_0xF3", .authenticatorStatus),
    ]

    @Test(arguments: specTable)
    func statusBecomesItsCode(byte: UInt8, specName: String, code: CTAP2Error.Code) {
        let status = CTAPStatus(rawValue: byte)
        #expect(status.name == specName)
        let error = CTAP2Error.authenticator(status)
        #expect(error.code == code, "\(specName)")
        #expect(error.status == status)
        #expect(!error.message.isEmpty)
        // The sentence is for people: it never shows the raw byte name.
        #expect(!error.message.contains("CTAP"))
    }

    /// The session throws the classified error itself: no layer above has to look at the byte.
    @Test(arguments: specTable)
    func sessionThrowsTheClassifiedError(byte: UInt8, specName: String, code: CTAP2Error.Code) async {
        let session = CTAP2Session(connection: ReplayConnection([.success([byte])]))
        let error = await #expect(throws: CTAP2Error.self) { try await session.selection() }
        #expect(error?.code == code, "\(specName)")
        #expect(error?.status?.rawValue == byte)
    }

    @Test func errorsCompareByCodeAndStatusNotByWording() {
        let a = CTAP2Error(.pinInvalid, "The PIN is wrong.", status: CTAPStatus(rawValue: 0x31))
        let b = CTAP2Error(
            .pinInvalid, "Wrong PIN. 3 attempts left.", status: CTAPStatus(rawValue: 0x31), retriesLeft: 3)
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(a.line != b.line)
        #expect(a.file.hasSuffix("StatusClassificationTests.swift"))
        #expect(a != CTAP2Error(.pinInvalid, "The PIN is wrong."))
        #expect(a != CTAP2Error(.pinBlocked, "The PIN is wrong.", status: CTAPStatus(rawValue: 0x31)))
        #expect(CTAP2Error.malformed("x") == CTAP2Error(.malformedResponse, "y"))
    }

    @Test func transportErrorsCompareByCode() {
        let a = TransportError(.timeout, "Timed out.")
        let b = TransportError.timeout("The key did not answer.")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != TransportError.cancelled("Timed out."))
        #expect(b.file.hasSuffix("StatusClassificationTests.swift"))
    }
}
