import Foundation
import Testing
import VirtualAuthenticator

/// python-fido2's BioEnrollment/FPBioEnrollment drive a virtual key with a simulated
/// fingerprint sensor (scripts/python/fido2_bio_check.py) over CTAPHID/UDP; the assertions are
/// on what python-fido2 decoded, checked against the statuses the sensor was scripted with.
@Suite struct VirtualKeyBioPythonTests {
    /// Four good samples needed; the user first places the finger badly three times.
    static let script: [ScriptedFingerprintSample] = [
        .feedback(.good), .feedback(FingerprintSampleFeedback(name: "too-high")!),
        .feedback(FingerprintSampleFeedback(name: "too-low")!), .feedback(FingerprintSampleFeedback(name: "poor-quality")!),
    ]

    @Test func pythonFIDO2EnrollsAFingerOverUDP() async throws {
        let key = try VirtualKey(
            configuration: .ctap21().withFingerprintSensor(.init(samplesRequired: 4, samples: Self.script)))
        guard let verdicts = try await runPythonCheck("fido2_bio_check.py", key) else { return }
        Self.checkView(verdicts, preview: false)
        #expect(await key.fingerprintEnrollments.isEmpty)
    }

    @Test func pythonFIDO2EnrollsAFingerOnAPreviewKeyOverUDP() async throws {
        let key = try VirtualKey(
            configuration: .ctap21Preview().withFingerprintSensor(.init(samplesRequired: 4, samples: Self.script)))
        guard let verdicts = try await runPythonCheck("fido2_bio_check.py", key, arguments: ["--preview"]) else { return }
        Self.checkView(verdicts, preview: true)
        #expect(verdicts["getInfo"]?["versions"] as? [String] == ["U2F_V2", "FIDO_2_0", "FIDO_2_1_PRE"])
    }

    static func checkView(_ verdicts: [String: [String: Any]], preview: Bool) {
        #expect(verdicts.count == 11, "\(verdicts.keys.sorted())")
        for (step, verdict) in verdicts {
            #expect(verdict["ok"] as? Bool == true, "\(step): \(verdict)")
        }
        let before = verdicts["getInfo"] ?? [:]
        #expect(before["supported"] as? Bool == true)
        #expect(before["bio"] as? Bool == false)
        #expect(before["uv"] as? Bool == false)
        // FIDO Registry USER_VERIFY_FINGERPRINT_INTERNAL.
        #expect(before["uvModality"] as? Int == 2)

        let sensor = verdicts["sensorInfo"] ?? [:]
        #expect(sensor["modality"] as? Int == 1)
        #expect(sensor["getModality"] as? Int == 1)
        #expect(sensor["kind"] as? Int == 1)
        #expect(sensor["samplesRequired"] as? Int == 4)
        #expect(sensor["maxName"] as? Int == 32)
        #expect(verdicts["enumerateEmpty"]?["templates"] as? Int == 0)
        #expect(verdicts["noToken"]?["enrollWithoutToken"] as? String == "PUAT_REQUIRED")

        // Each scripted sample as python-fido2 decoded it; only good ones count down.
        let samples = verdicts["enroll"]?["samples"] as? [[String: Any]] ?? []
        #expect(samples.map { $0["status"] as? String } == [
            "FP_GOOD", "FP_TOO_HIGH", "FP_TOO_LOW", "FP_POOR_QUALITY", "FP_GOOD", "FP_GOOD", "FP_GOOD",
        ])
        #expect(samples.map { $0["remaining"] as? Int } == [3, 3, 3, 3, 2, 1, 0])
        let template = verdicts["enroll"]?["templateId"] as? String ?? ""
        #expect(!template.isEmpty)

        let after = verdicts["getInfoEnrolled"] ?? [:]
        #expect(after["bio"] as? Bool == true)
        #expect(after["uv"] as? Bool == true)

        let renamed = verdicts["rename"] ?? [:]
        #expect(renamed["templates"] as? [String: String] == [template: "left thumb"])
        #expect(renamed["unknownId"] as? String == "INVALID_OPTION")
        if preview {
            #expect(verdicts["uvToken"]?["skipped"] as? Bool == true)
        } else {
            #expect(verdicts["uvToken"]?["tokenLength"] as? Int == 32)
        }
        let cancel = verdicts["cancel"] ?? [:]
        #expect(cancel["firstStatus"] as? String == "FP_GOOD")
        #expect(cancel["remaining"] as? Int == 3)
        #expect(cancel["captureAfterCancel"] as? String == "INVALID_PARAMETER")
        #expect(cancel["templates"] as? Int == 1)

        let removed = verdicts["remove"] ?? [:]
        #expect(removed["removeAgain"] as? String == "INVALID_OPTION")
        #expect(removed["templates"] as? Int == 0)
        #expect(removed["bio"] as? Bool == false)
        #expect(removed["uv"] as? Bool == false)
    }
}
