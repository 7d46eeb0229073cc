import CBOR
import Crypto
import Foundation
import Testing
import Transport

@testable import CTAP2

/// authenticatorBioEnrollment (CTAP 2.1 §6.7) against bytes written out by hand from the spec's
/// parameter, response and lastEnrollSampleStatus tables, and pinUvAuthParams computed here
/// with swift-crypto's HMAC over the spec's message layout (modality ‖ subCommand ‖
/// CBOR(subCommandParams)).
@Suite struct BioEnrollmentTests {
    static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.filter { !$0.isWhitespace })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    static let tokenBytes = [UInt8](repeating: 0x5A, count: 32)
    static func token(_ version: Int, permissions: PINUVAuthTokenPermissions = [.bioEnrollment]) -> PINUVAuthToken {
        PINUVAuthToken(
            token: tokenBytes, pinUVAuthProtocol: version == 1 ? PINUVAuthProtocolOne() : PINUVAuthProtocolTwo(),
            permissions: permissions, rpID: nil)
    }

    /// authenticate() of the spec: HMAC-SHA-256, truncated to 16 bytes for protocol one.
    static func hmac(_ version: Int, _ message: [UInt8]) -> [UInt8] {
        let mac = Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: tokenBytes)))
        return version == 1 ? Array(mac.prefix(16)) : mac
    }

    /// Template IDs as users give them: base64url (RFC 4648 §5) of 1 to 255 bytes, the spec's
    /// bounds on templateId.
    @Test(arguments: [
        ("AQ", [UInt8]([0x01])), ("_-8", [0xFF, 0xEF]), (String(repeating: "A", count: 340), [UInt8](repeating: 0, count: 255)),
        ("", nil), ("AA==x", nil), ("not base64!", nil), (String(repeating: "A", count: 342), nil),
    ])
    func templateIDsFromText(_ text: String, _ expected: [UInt8]?) {
        #expect(FingerprintTemplate.id(base64URL: text) == expected)
    }

    @Test func unauthenticatedRequestsEncodeAsTheSpecTables() throws {
        // {1: modality fingerprint, 2: getFingerprintSensorInfo}
        #expect(try BioEnrollmentRequest.getFingerprintSensorInfo().encoded() == Self.hex("09 a2 01 01 02 07"))
        // {1: 1, 2: cancelCurrentEnrollment}, on the FIDO_2_1_PRE command byte.
        #expect(
            try BioEnrollmentRequest.cancelCurrentEnrollment(command: .bioEnrollmentPreview).encoded()
                == Self.hex("40 a2 01 01 02 03"))
        // {6: getModality true}
        #expect(try BioEnrollmentRequest.getModality().encoded() == Self.hex("09 a1 06 f5"))
    }

    @Test(arguments: [1, 2]) func enrollBeginAuthenticatesModalitySubCommandAndParams(_ version: Int) throws {
        let request = try BioEnrollmentRequest.enrollBegin(timeoutMilliseconds: 10_000, token: Self.token(version))
        // modality 01, enrollBegin 01, CBOR {3: 10000}
        let message = Self.hex("01 01 a1 03 19 2710")
        let param = Self.hmac(version, message)
        // A byte string of 16 bytes has a one-byte header (0x50), of 32 a two-byte one (0x58 0x20).
        let header: [UInt8] = param.count < 24 ? [0x40 + UInt8(param.count)] : [0x58, UInt8(param.count)]
        let expected = Self.hex("09 a5 01 01 02 01 03 a1 03 19 2710 04") + [UInt8(version), 0x05] + header + param
        #expect(try request.encoded() == expected)
    }

    @Test(arguments: [1, 2]) func templateSubcommandsAuthenticateTheirParams(_ version: Int) throws {
        let id: [UInt8] = [0x00, 0x07]
        let capture = try BioEnrollmentRequest.enrollCaptureNextSample(templateID: id, token: Self.token(version))
        #expect(capture.pinUVAuthParam == Self.hmac(version, Self.hex("01 02 a1 01 42 0007")))
        let enumerate = try BioEnrollmentRequest.enumerateEnrollments(token: Self.token(version))
        #expect(enumerate.subCommandParams == nil)
        #expect(enumerate.pinUVAuthParam == Self.hmac(version, Self.hex("01 04")))
        let rename = try BioEnrollmentRequest.setFriendlyName(templateID: id, name: "ab", token: Self.token(version))
        #expect(rename.pinUVAuthParam == Self.hmac(version, Self.hex("01 05 a2 01 42 0007 02 62 6162")))
        let remove = try BioEnrollmentRequest.removeEnrollment(templateID: id, token: Self.token(version))
        #expect(remove.pinUVAuthParam == Self.hmac(version, Self.hex("01 06 a1 01 42 0007")))
        #expect(remove.pinUVAuthProtocol == UInt64(version))
    }

    @Test func aTokenWithoutTheBePermissionIsRefusedBeforeTheKeyIsAsked() {
        #expect(throws: CTAP2Error(.unauthorizedPermission, "")) {
            try BioEnrollmentRequest.enumerateEnrollments(token: Self.token(2, permissions: [.credentialManagement]))
        }
        #expect(throws: CTAP2Error(.invalidRequest, "")) {
            try BioEnrollmentRequest.removeEnrollment(templateID: [], token: Self.token(2))
        }
        #expect(throws: CTAP2Error(.invalidRequest, "")) {
            try BioEnrollmentRequest.setFriendlyName(templateID: [1], name: "", token: Self.token(2))
        }
    }

    @Test func sensorInfoAndSampleRepliesDecode() throws {
        // {1: 1, 2: touch, 3: 4 samples, 8: 16-byte names}
        let sensor = try BioEnrollmentResponse(cbor: Self.hex("a4 01 01 02 01 03 04 08 10"))
        #expect(sensor.modality == .fingerprint)
        #expect(sensor.fingerprintKind == .touch)
        #expect(sensor.maxCaptureSamplesRequiredForEnroll == 4)
        #expect(sensor.maxTemplateFriendlyName == 16)
        // {4: templateId h'0001', 5: FP_TOO_HIGH, 6: 3 remaining}
        let begin = try BioEnrollmentResponse(cbor: Self.hex("a3 04 42 0001 05 01 06 03"))
        #expect(begin.templateID == [0x00, 0x01])
        #expect(begin.lastEnrollSampleStatus == .tooHigh)
        #expect(begin.remainingSamples == 3)
        // 0x0C is unused in CTAP 2.1: kept as a number, not misnamed.
        let unknown = try BioEnrollmentResponse(cbor: Self.hex("a2 05 0c 06 02"))
        #expect(unknown.lastEnrollSampleStatus?.rawValue == 0x0C)
        #expect(unknown.lastEnrollSampleStatus?.name == "status-0x0c")
        // {7: [{1: h'01', 2: "a"}, {1: h'02'}]}
        let list = try BioEnrollmentResponse(cbor: Self.hex("a1 07 82 a2 01 41 01 02 61 61 a1 01 41 02"))
        #expect(list.templateInfos == [
            FingerprintTemplate(id: [1], friendlyName: "a"), FingerprintTemplate(id: [2], friendlyName: nil),
        ])
        #expect(try BioEnrollmentResponse(cbor: []).templateInfos == nil)
    }

    @Test func theSpecTableNamesEverySampleStatus() {
        // CTAP 2.1 §6.7 lastEnrollSampleStatus, 0x00 to 0x0E without 0x0C.
        let expected: [UInt64: String] = [
            0x00: "good", 0x01: "too-high", 0x02: "too-low", 0x03: "too-left", 0x04: "too-right", 0x05: "too-fast",
            0x06: "too-slow", 0x07: "poor-quality", 0x08: "too-skewed", 0x09: "too-short", 0x0A: "merge-failure",
            0x0B: "exists", 0x0D: "no-user-activity", 0x0E: "no-user-presence-transition",
        ]
        for (value, name) in expected {
            #expect(FingerprintSampleStatus(rawValue: value).name == name)
        }
        #expect(FingerprintSampleStatus.named.count == expected.count)
    }

    static let hostile: [(String, String)] = [
        ("templateId is text", "a1 04 61 41"),
        ("empty templateId", "a1 04 40"),
        ("status is a string", "a1 05 61 41"),
        ("remaining past the bound", "a1 06 19 0100"),
        ("samples required past the bound", "a1 03 19 0100"),
        ("templateInfos is a map", "a1 07 a0"),
        ("templateInfo without an ID", "a1 07 81 a1 02 61 61"),
        ("templateInfo name is bytes", "a1 07 81 a2 01 41 01 02 41 61"),
        ("not a map", "80"),
        ("truncated", "a2 04 42 00"),
    ]

    @Test(arguments: hostile.indices) func hostileRepliesAreMalformed(_ index: Int) {
        let (what, bytes) = Self.hostile[index]
        #expect(throws: CTAP2Error(.malformedResponse, ""), "\(what)") {
            try BioEnrollmentResponse(cbor: Self.hex(bytes))
        }
    }

    @Test func theCommandFollowsGetInfo() throws {
        func info(_ versions: [String], _ options: CBORMap) throws -> AuthenticatorInfo {
            try AuthenticatorInfo(map: [
                1: .array(versions.map { .textString($0) }), 3: .byteString([UInt8](repeating: 0, count: 16)),
                4: .map(options),
            ])
        }
        #expect(BioEnrollmentRequest.command(for: try info(["FIDO_2_1"], ["bioEnroll": false])) == .bioEnrollment)
        #expect(
            BioEnrollmentRequest.command(
                for: try info(["FIDO_2_0", "FIDO_2_1_PRE"], ["userVerificationMgmtPreview": false]))
                == .bioEnrollmentPreview)
        #expect(BioEnrollmentRequest.command(for: try info(["FIDO_2_0"], ["userVerificationMgmtPreview": true])) == nil)
        #expect(BioEnrollmentRequest.command(for: try info(["FIDO_2_1"], ["uv": true])) == nil)
    }

    @Test func enumeratingAKeyWithoutFingersGivesAnEmptyList() async throws {
        // The key answers CTAP2_ERR_INVALID_OPTION when nothing is enrolled (§6.7.5).
        let connection = ScriptedCTAPConnection { _, _ in [0x2C] }
        let session = CTAP2Session(connection: connection)
        let info = try AuthenticatorInfo(map: [
            1: .array(["FIDO_2_1"]), 3: .byteString([UInt8](repeating: 0, count: 16)), 4: .map(["bioEnroll": false]),
        ])
        let bio = try BioEnrollment(session: session, info: info, token: Self.token(2))
        #expect(try await bio.enrollments() == [])
        await #expect(throws: CTAP2Error(.templateNotFound, "")) {
            try await bio.removeEnrollment(templateID: [1])
        }
        #expect(connection.requests.first?.first == 0x09)
    }
}
