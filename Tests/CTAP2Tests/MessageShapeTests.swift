import CBOR
import Testing

@testable import CTAP2

/// Members of the makeCredential and getAssertion messages that the recorded vectors do not
/// exercise, built from the key tables of CTAP 2.2 §6.1 and §6.2.
@Suite struct MessageShapeTests {
    static var authDataMC: [UInt8] { Vectors.python("test_ctap2/module/_AUTH_DATA_MC")?.bytes ?? [] }
    static var authDataGA: [UInt8] { Vectors.python("test_ctap2/module/_AUTH_DATA_GA")?.bytes ?? [] }

    @Test func makeCredentialResponseOptionalMembers() throws {
        let map: CBORMap = [
            1: "none", 2: .byteString(Self.authDataMC), 3: .map([:]), 4: true,
            5: .byteString([UInt8](repeating: 0x42, count: 32)), 6: .map(["credBlob": true]), 7: "later",
        ]
        let response = try MakeCredentialResponse(cbor: CBOREncoder.encode(.map(map)))
        #expect(response.format == AttestationFormat.none)
        #expect(response.enterpriseAttestation == true)
        #expect(response.largeBlobKey == [UInt8](repeating: 0x42, count: 32))
        #expect(response.unsignedExtensionOutputs == ["credBlob": true])
        #expect(response.unknownFields == [7: "later"])
        #expect(response.attestationObject.format == AttestationFormat.none)
    }

    @Test func getAssertionResponseOptionalMembers() throws {
        let map: CBORMap = [
            1: .map(["id": .byteString([1, 2]), "type": "public-key"]), 2: .byteString(Self.authDataGA),
            3: .byteString([0x30, 0x00]),
            4: .map(["id": .byteString([9]), "name": "alice", "displayName": "Alice"]), 5: 3, 6: true,
            7: .byteString([7]), 8: .map(["x": 1]),
        ]
        let response = try GetAssertionResponse(cbor: CBOREncoder.encode(.map(map)))
        #expect(response.credential == PublicKeyCredentialDescriptor(id: [1, 2]))
        #expect(response.user == UserEntity(id: [9], name: "alice", displayName: "Alice"))
        #expect(response.numberOfCredentials == 3)
        #expect(response.userSelected == true)
        #expect(response.largeBlobKey == [7])
        #expect(response.unsignedExtensionOutputs == ["x": 1])
        #expect(response.unknownFields.isEmpty)
    }

    @Test func responsesMissingRequiredMembersAreRejected() {
        let mc: [CBORMap] = [
            [2: .byteString(Self.authDataMC), 3: .map([:])],
            [1: "none", 3: .map([:])],
            [1: "none", 2: .byteString(Self.authDataMC)],
            [1: "none", 2: .byteString(Self.authDataGA), 3: .map([:])],  // no attested credential
            [1: 5, 2: .byteString(Self.authDataMC), 3: .map([:])],
        ]
        for map in mc {
            let error = #expect(throws: CTAP2Error.self) { try MakeCredentialResponse(map: map) }
            #expect(error?.code == .malformedResponse)
        }
        let ga: [CBORMap] = [
            [2: .byteString(Self.authDataGA)],
            [3: .byteString([1])],
            [2: .byteString(Self.authDataGA), 3: .byteString([1]), 4: .map(["name": "no id"])],
            [1: .map(["type": "public-key"]), 2: .byteString(Self.authDataGA), 3: .byteString([1])],
        ]
        for map in ga {
            let error = #expect(throws: CTAP2Error.self) { try GetAssertionResponse(map: map) }
            #expect(error?.code == .malformedResponse)
        }
    }

    @Test func requestsAreCTAP2Canonical() throws {
        let make = MakeCredentialRequest(
            clientDataHash: [UInt8](repeating: 1, count: 32), rp: RelyingPartyEntity(id: "example.com"),
            user: UserEntity(id: [1], name: "n", displayName: "d"),
            pubKeyCredParams: [.init(algorithm: .es256)],
            excludeList: [PublicKeyCredentialDescriptor(id: [2])],
            extensions: ["credProtect": 3, "hmac-secret": true],
            options: CommandOptions(residentKey: true, userPresence: true, userVerification: false),
            enterpriseAttestation: 2, attestationFormatsPreference: ["packed", "none"])
        let bytes = try make.encoded()
        #expect(bytes.first == CTAP2Command.makeCredential.rawValue)
        let decoded = try CBORDecoder(options: .ctap2).decode(Array(bytes.dropFirst()))
        let map = try #require(decoded.mapValue)
        #expect(map[0x0A] == 2)
        #expect(map[0x0B] == ["packed", "none"])
        #expect(map[0x07] == .map(["rk": true, "up": true, "uv": false]))

        let get = GetAssertionRequest(rpID: "example.com", clientDataHash: [UInt8](repeating: 2, count: 32))
        let getBytes = try get.encoded()
        #expect(getBytes.first == CTAP2Command.getAssertion.rawValue)
        #expect(try CBORDecoder(options: .ctap2).decode(Array(getBytes.dropFirst())).mapValue?.count == 2)

        var rkOnGet = get
        rkOnGet.options = CommandOptions(residentKey: true)
        #expect(throws: CTAP2Error.self) { try rkOnGet.encoded() }
        var longUser = make
        longUser.user.id = [UInt8](repeating: 0, count: 65)
        #expect(throws: CTAP2Error.self) { try longUser.encoded() }
    }

    @Test func aaguidTextForm() throws {
        // python-fido2 TestAaguid.test_aaguid_parse.
        let vector = try #require(Vectors.python("test_webauthn/TestAaguid.test_aaguid_parse/arg-of:Aaguid"))
        let parsed = try #require(AAGUID(uuidString: "01020304-0102-0304-0506-010203040506"))
        #expect(parsed.bytes == vector.bytes)
        #expect(parsed.description == "01020304-0102-0304-0506-010203040506")
        #expect(AAGUID(uuidString: "00000000-0000-0000-0000-000000000000") == .zero)
        #expect(AAGUID(uuidString: "not-a-uuid") == nil)
    }
}
