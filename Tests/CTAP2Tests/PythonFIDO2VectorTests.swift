import CBOR
import Testing

@testable import CTAP2

/// python-fido2's recorded vectors (Tests/Vectors/python-fido2-vectors.json); the expected
/// values below are the ones python-fido2's own tests assert (each entry's `expected`).
@Suite struct PythonFIDO2VectorTests {
    @Test(arguments: Vectors.pythonFIDO2.filter { $0.kind == "authenticatorData" })
    func authenticatorDataParses(_ vector: Vector) throws {
        let parsed = try AuthenticatorData(bytes: vector.bytes)
        expectMatches(parsed, try #require(vector.authData), vector.id)
    }

    @Test func authenticatorDataRejectsTruncation() throws {
        let vector = try #require(Vectors.python("test_ctap2/module/_AUTH_DATA_MC"))
        for length in [0, 36, 37 + 17, vector.bytes.count - 1] {
            let error = #expect(throws: CTAP2Error.self) {
                try AuthenticatorData(bytes: Array(vector.bytes.prefix(length)))
            }
            #expect(error?.code == .malformedResponse)
        }
        let error = #expect(throws: CTAP2Error.self) { try AuthenticatorData(bytes: vector.bytes + [0x00]) }
        #expect(error?.code == .malformedResponse)
    }

    static let getInfoVectors = Vectors.pythonFIDO2.filter {
        $0.kind == "ctap2-response-cbor" && ($0.cborDiagnostic?.hasPrefix("{1: [") ?? false)
    }

    @Test(arguments: getInfoVectors)
    func getInfoParses(_ vector: Vector) throws {
        let info = try AuthenticatorInfo(cbor: vector.bytes)
        // TestInfo.test_parse_bytes
        #expect(info.versions.map(\.rawValue) == ["U2F_V2", "FIDO_2_0"])
        #expect(info.extensions.map(\.rawValue) == ["uvm", "hmac-secret"])
        #expect(info.aaguid.bytes == Vectors.python("test_ctap2/module/_AAGUID")?.bytes)
        #expect(info.options == [AuthenticatorOption(rawValue: "rk"): true, AuthenticatorOption(rawValue: "up"): true, AuthenticatorOption(rawValue: "plat"): false, AuthenticatorOption(rawValue: "clientPin"): false])
        #expect(info.maxMsgSize == 1200)
        #expect(info.pinUVAuthProtocols == [1])
        #expect(diagnostic(.map(info.fields)) == vector.cborDiagnostic)
        if vector.id.hasSuffix("_INFO_EXTRA_KEY") {
            // TestInfo.test_info_with_extra_field: key 99 is unknown and must be kept.
            #expect(info.unknownFields == [99: 1234])
        } else {
            #expect(info.unknownFields.isEmpty)
        }
    }

    @Test func getInfoWithAllCTAP22Fields() throws {
        // A getInfo map using every CTAP 2.2 member, built from the spec's key table.
        let map: CBORMap = [
            1: ["FIDO_2_0", "FIDO_2_1", "FIDO_2_2"], 2: ["credProtect"],
            3: .byteString([UInt8](repeating: 7, count: 16)),
            4: .map(["rk": true, "clientPin": true]), 5: 2048, 6: [2, 1], 7: 8, 8: 128, 9: ["usb", "nfc"],
            10: [.map(["alg": -7, "type": "public-key"]), .map(["alg": -8, "type": "public-key"])], 11: 4096,
            12: false,
            13: 6, 14: 328_707, 15: 32, 16: 2, 17: 3, 18: 2, 19: .map(["FIDO": 2]), 20: 25, 21: [0x10],
            22: ["packed", "none"], 23: 1, 24: true, 25: .byteString([1, 2]), 26: ["usb"], 27: true,
            28: .byteString(Array("https://x".utf8)), 29: 63, 30: .byteString([3]), 31: [1, 2],
            0x40: "future",
        ]
        let info = try AuthenticatorInfo(map: map)
        #expect(info.versions.count == 3)
        #expect(info.algorithms.map(\.algorithm) == [.es256, .edDSA])
        #expect(info.maxSerializedLargeBlobArray == 4096)
        #expect(info.forcePINChange == false)
        #expect(info.minPINLength == 6)
        #expect(info.firmwareVersion == 328_707)
        #expect(info.maxCredBlobLength == 32)
        #expect(info.maxRPIDsForSetMinPINLength == 2)
        #expect(info.preferredPlatformUVAttempts == 3)
        #expect(info.uvModality == 2)
        #expect(info.certifications == ["FIDO": 2])
        #expect(info.remainingDiscoverableCredentials == 25)
        #expect(info.vendorPrototypeConfigCommands == [0x10])
        #expect(info.attestationFormats == ["packed", "none"])
        #expect(info.uvCountSinceLastPINEntry == 1)
        #expect(info.longTouchForReset == true)
        #expect(info.encIdentifier == [1, 2])
        #expect(info.transportsForReset == ["usb"])
        #expect(info.pinComplexityPolicy == true)
        #expect(info.pinComplexityPolicyURL == Array("https://x".utf8))
        #expect(info.maxPINLength == 63)
        #expect(info.encCredStoreState == [3])
        #expect(info.authenticatorConfigCommands == [1, 2])
        #expect(info.unknownFields == [0x40: "future"])
    }

    @Test func getInfoRejectsWrongTypes() {
        let bad: [CBORMap] = [
            [2: ["x"], 3: .byteString([UInt8](repeating: 0, count: 16))],  // no versions
            [1: ["FIDO_2_0"], 3: .byteString([0])],  // short aaguid
            [1: ["FIDO_2_0"], 3: .byteString([UInt8](repeating: 0, count: 16)), 5: "big"],
            [1: [1], 3: .byteString([UInt8](repeating: 0, count: 16))],
            [1: ["FIDO_2_0"], 3: .byteString([UInt8](repeating: 0, count: 16)), 4: .map(["rk": 1])],
        ]
        for map in bad {
            let error = #expect(throws: CTAP2Error.self) { try AuthenticatorInfo(map: map) }
            #expect(error?.code == .malformedResponse)
        }
    }

    static let makeCredentialVectors = Vectors.pythonFIDO2.filter {
        $0.kind == "ctap2-response-cbor" && ($0.cborDiagnostic?.hasPrefix("{1: \"") ?? false)
    }

    /// The replies that are CTAP2 canonical; the one that is not (test_client's _MC_RESP) is
    /// refused, as StrictDecodingTests checks.
    static let canonicalMakeCredentialVectors = makeCredentialVectors.filter {
        (try? CBORDecoder(options: .ctap2).decode($0.bytes)) != nil
    }

    @Test(arguments: canonicalMakeCredentialVectors)
    func makeCredentialResponseParses(_ vector: Vector) throws {
        let response = try MakeCredentialResponse(cbor: vector.bytes)
        // TestCtap2.test_make_credential: fmt packed, att_stmt keys {alg, sig, x5c}.
        #expect(response.format == .packed)
        #expect(Set(response.attestationStatement.keys) == ["alg", "sig", "x5c"])
        #expect(response.attestationStatement["x5c"]?.arrayValue?.count == vector.x5cCount)
        expectMatches(response.authData, try #require(vector.authData), vector.id)
        #expect(response.unknownFields.isEmpty)
    }

    @Test func getAssertionResponseParses() throws {
        let vector = try #require(Vectors.python("test_ctap2/module/_GA_RESP"))
        let response = try GetAssertionResponse(cbor: vector.bytes)
        // TestCtap2.test_get_assertion
        #expect(response.credential?.id == Vectors.python("test_ctap2/module/_CRED_ID")?.bytes)
        #expect(response.credential?.type == "public-key")
        #expect(response.authData.bytes == Vectors.python("test_ctap2/module/_AUTH_DATA_GA")?.bytes)
        #expect(response.signature == Vectors.python("test_ctap2/module/_SIGNATURE")?.bytes)
        #expect(response.user == nil)
        #expect(response.numberOfCredentials == nil)
        expectMatches(response.authData, try #require(vector.authData), vector.id)
    }

    // MARK: COSE keys (python-fido2 tests/test_cose.py)

    @Test func coseKeyRejectsBadShapes() {
        let bad: [CBORMap] = [
            [3: -7],  // no kty
            [1: 2, 3: -7, -1: 1, -2: .byteString([1, 2]), -3: .byteString([3])],  // short coordinates
            [
                1: 2, 3: -7, -1: 1, -2: .byteString([UInt8](repeating: 1, count: 32)),
                -3: .byteString([UInt8](repeating: 1, count: 32)),
            ],  // not on the curve
            [1: 1, 3: -8, -1: 6, -2: "text"],
        ]
        for map in bad {
            #expect(throws: CTAP2Error.self) { try COSEKey(map: map).publicKey() }
        }
    }
}
