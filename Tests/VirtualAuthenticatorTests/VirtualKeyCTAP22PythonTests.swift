import Foundation
import Testing
import VirtualAuthenticator

/// python-fido2 2.2.1 (Info, ClientPin, Fido2Client with ThirdPartyPaymentExtension,
/// CredentialManagement) drives a CTAP 2.2 virtual key over CTAPHID/UDP
/// (scripts/python/fido2_ctap22_check.py); the assertions are on what python-fido2 saw.
@Suite struct VirtualKeyCTAP22PythonTests {
    /// The key the check expects: built-in UV, a PIN complexity policy with its URL,
    /// maxPINLength 32, a long touch for reset over USB only.
    static var configuration: VirtualKey.Configuration {
        var configuration = VirtualKey.Configuration.ctap22(builtInUV: true)
        configuration.ctap22.pinComplexityPolicy = true
        configuration.ctap22.pinComplexityPolicyURL = "https://example.com/pin-policy"
        configuration.ctap22.maxPINLength = 32
        configuration.ctap22.longTouchForReset = true
        configuration.ctap22.transportsForReset = ["usb"]
        return configuration
    }

    @Test func pythonFIDO2ReadsAndUsesEveryCTAP22Feature() async throws {
        let key = try VirtualKey(configuration: Self.configuration)
        guard let verdicts = try await runPythonCheck("fido2_ctap22_check.py", key) else { return }
        #expect(verdicts.count == 7, "\(verdicts.keys.sorted())")
        for (step, verdict) in verdicts {
            #expect(verdict["ok"] as? Bool == true, "\(step): \(verdict)")
        }
        let info = verdicts["getInfo"] ?? [:]
        #expect(info["versions"] as? [String] == ["U2F_V2", "FIDO_2_0", "FIDO_2_1", "FIDO_2_2", "FIDO_2_3"])
        #expect((info["extensions"] as? [String])?.contains("thirdPartyPayment") == true)
        #expect(info["attestationFormats"] as? [String] == ["packed", "none"])
        #expect(info["uvCountSinceLastPinEntry"] as? Int == 0)
        #expect(info["longTouchForReset"] as? Bool == true)
        #expect(info["transportsForReset"] as? [String] == ["usb"])
        #expect(info["pinComplexityPolicy"] as? Bool == true)
        #expect(info["pinComplexityPolicyURL"] as? String == "https://example.com/pin-policy")
        #expect(info["maxPINLength"] as? Int == 32)
        // enableEnterpriseAttestation, toggleAlwaysUv, setMinPINLength (CTAP 2.1 §6.11).
        #expect(info["authenticatorConfigCommands"] as? [Int] == [1, 2, 3])
        #expect(info["preferredPlatformUvAttempts"] as? Int == 3)

        let policy = verdicts["pinPolicy"] ?? [:]
        let refused = policy["refused"] as? [String: String] ?? [:]
        #expect(refused == [
            "repeated": "PIN_POLICY_VIOLATION", "ascending": "PIN_POLICY_VIOLATION",
            "descending": "PIN_POLICY_VIOLATION", "tooLong": "PIN_POLICY_VIOLATION",
        ])
        #expect(policy["clientPin"] as? Bool == true)
        #expect(policy["retries"] as? Int == 8, "a refused new PIN costs no retry")

        // Two built-in verifications, then the PIN: the count goes 0, 1, 2, back to 0.
        #expect(verdicts["uvCount"]?["counts"] as? [Int] == [0, 1, 2, 0])

        #expect(verdicts["paymentCredentialManagement"]?["byUser"] as? [String: Bool] == ["pay": true, "plain": false])
        #expect(verdicts["paymentAssertion"]?["outputs"] as? [String: Bool] == ["pay": true, "plain": false])
        #expect(
            verdicts["attestationFormats"]?["formats"] as? [String: String]
                == ["none": "none", "tpmThenPacked": "packed", "unknown": "packed"])
    }
}
