import CTAP2
import Testing
import Transport

/// The kind of failure each status and transport condition is: the expected kinds are the exit
/// statuses Docs/CLI.md documents for them ("Error codes": a wrong or blocked PIN is a PIN problem
/// (5), a touch not given in time or refused is a cancellation (4), an algorithm, option or
/// extension the key lacks is not supported (6)); the status bytes are CTAP 2.2 §8.2's.
@Suite struct FailureCategoryTests {
    @Test(arguments: [
        (UInt8(0x31), FailureCategory.pinProblem),  // CTAP2_ERR_PIN_INVALID
        (0x32, .pinProblem),  // CTAP2_ERR_PIN_BLOCKED
        (0x35, .pinProblem),  // CTAP2_ERR_PIN_NOT_SET
        (0x36, .pinProblem),  // CTAP2_ERR_PUAT_REQUIRED
        (0x2F, .cancelled),  // CTAP2_ERR_USER_ACTION_TIMEOUT
        (0x27, .cancelled),  // CTAP2_ERR_OPERATION_DENIED
        (0x2D, .cancelled),  // CTAP2_ERR_KEEPALIVE_CANCEL
        (0x26, .notSupported),  // CTAP2_ERR_UNSUPPORTED_ALGORITHM
        (0x2B, .notSupported),  // CTAP2_ERR_UNSUPPORTED_OPTION
        (0x01, .notSupported),  // CTAP1_ERR_INVALID_COMMAND
        (0x2E, .failure),  // CTAP2_ERR_NO_CREDENTIALS
        (0x19, .failure),  // CTAP2_ERR_CREDENTIAL_EXCLUDED
    ])
    func statusCategory(_ status: UInt8, _ expected: FailureCategory) {
        #expect(CTAP2Error.authenticator(CTAPStatus(rawValue: status)).category == expected)
    }

    @Test func transportConditionsKeepTheirCategoryUnderCTAP2() {
        let cases: [(TransportError, FailureCategory)] = [
            (.noDevice("gone"), .noDevice), (.timeout("late"), .cancelled), (.cancelled("stop"), .cancelled),
            (TransportError(.invalidURI, "bad"), .usage), (TransportError(.notSupported, "no"), .notSupported),
        ]
        for (error, expected) in cases {
            #expect(error.category == expected)
            #expect(CTAP2Error.transport("underneath", underlying: error).category == expected)
        }
    }
}
