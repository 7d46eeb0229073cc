import CBOR
import Testing

@testable import CTAP2

/// What a key returns must be CTAP2 canonical CBOR (CTAP 2.1 §8): real replies from the vectors,
/// re-encoded with map keys out of order, twice, or with non-shortest lengths, are refused with
/// a typed error naming the CBOR rule; the lenient call sites read what they are lenient for.
@Suite struct StrictDecodingTests {
    static let group = "sctn-test-vectors-none-es256"

    /// The W3C none-es256 registration's authenticator data, split before its COSE key.
    static func registration() throws -> (head: [UInt8], key: CBORMap) {
        let vector = try #require(Vectors.w3c(group, "registration/attestationObject"))
        let authData = try AttestationObject(cbor: vector.bytes).authData
        let credential = try #require(authData.attestedCredentialData)
        #expect(authData.extensions == nil)
        let keyStart = 37 + 16 + 2 + credential.credentialID.count
        let key = try #require(try CBORDecoder(options: .ctap2).decode(Array(authData.bytes[keyStart...])).mapValue)
        return (Array(authData.bytes[..<keyStart]), key)
    }

    /// A map's bytes with its entries in the order given, each written canonically.
    static func map(_ entries: [CBORMap.Entry], declaring count: Int? = nil) -> [UInt8] {
        let n = count ?? entries.count
        precondition(n < 24)
        return [0xA0 | UInt8(n)]
            + entries.flatMap { CBOREncoder.encode($0.key) + CBOREncoder.encode($0.value) }
    }

    /// The CBOR rule a refusal names, or nil when the error is not a malformed reply over CBOR.
    static func cborCode(_ error: CTAP2Error?) -> CBORError.Code? {
        guard let error, error.code == .malformedResponse else { return nil }
        return (error.underlying as? CBORError)?.code
    }

    @Test func canonicalCOSEKeyInAuthDataParses() throws {
        let (head, key) = try Self.registration()
        let data = try AuthenticatorData(bytes: head + Self.map(key.entries))
        #expect(data.attestedCredentialData?.credentialPublicKey.cborEncoded == Self.map(key.entries))
    }

    @Test func outOfOrderCOSEKeyInAuthDataIsRefused() throws {
        let (head, key) = try Self.registration()
        let swapped = [key.entries[1], key.entries[0]] + key.entries.dropFirst(2)
        let error = #expect(throws: CTAP2Error.self) { try AuthenticatorData(bytes: head + Self.map(swapped)) }
        #expect(Self.cborCode(error) == .mapKeyOrder)
    }

    @Test func duplicateKeyInCOSEKeyInAuthDataIsRefused() throws {
        let (head, key) = try Self.registration()
        let doubled = [key.entries[0]] + key.entries
        let error = #expect(throws: CTAP2Error.self) { try AuthenticatorData(bytes: head + Self.map(doubled)) }
        #expect(Self.cborCode(error) == .duplicateMapKey)
    }

    @Test func nonShortestLengthInCOSEKeyIsRefused() throws {
        let (head, key) = try Self.registration()
        // The x coordinate (label -2, 32 bytes) written with a two-byte length, 59 0020.
        var bytes = Self.map(key.entries)
        let x = CBOREncoder.encode(-2) + [0x58, 0x20]
        let at = try #require((0...(bytes.count - x.count)).first { Array(bytes[$0..<($0 + x.count)]) == x })
        bytes.replaceSubrange((at + 1)..<(at + 3), with: [0x59, 0x00, 0x20])
        let error = #expect(throws: CTAP2Error.self) { try AuthenticatorData(bytes: head + bytes) }
        #expect(Self.cborCode(error) == .nonCanonicalEncoding)
        // The same key as its own structure (COSEKey(cbor:)) is refused the same way.
        let cose = #expect(throws: CTAP2Error.self) { try COSEKey(cbor: bytes) }
        #expect(Self.cborCode(cose) == .nonCanonicalEncoding)
    }

    @Test func outOfOrderExtensionOutputsInAuthDataAreRefused() throws {
        // The W3C assertion's authenticator data (no extensions) with the ED flag and outputs
        // of credProtect and hmac-secret; canonical order puts "credProtect" first (same
        // length, then bytewise).
        let vector = try #require(Vectors.w3c(Self.group, "authentication/authenticatorData"))
        var head = Array(vector.bytes.prefix(37))
        head[32] |= 0x80
        let credProtect = CBORMap.Entry(key: "credProtect", value: 2)
        let hmacSecret = CBORMap.Entry(key: "hmac-secret", value: true)
        let inOrder = try AuthenticatorData(bytes: head + Self.map([credProtect, hmacSecret]))
        #expect(inOrder.extensions?["credProtect"] == 2)
        let reversed = #expect(throws: CTAP2Error.self) {
            try AuthenticatorData(bytes: head + Self.map([hmacSecret, credProtect]))
        }
        #expect(Self.cborCode(reversed) == .mapKeyOrder)
        let doubled = #expect(throws: CTAP2Error.self) {
            try AuthenticatorData(bytes: head + Self.map([credProtect, credProtect]))
        }
        #expect(Self.cborCode(doubled) == .duplicateMapKey)
    }

    @Test(arguments: PythonFIDO2VectorTests.getInfoVectors)
    func getInfoWithDuplicateOrUnorderedKeysIsRefused(_ vector: Vector) throws {
        let info = try #require(try CBORDecoder(options: .ctap2).decode(vector.bytes).mapValue)
        #expect(Self.map(info.entries) == vector.bytes)
        let doubled = Array(info.entries.prefix(2)) + info.entries.dropFirst(1)
        let duplicate = #expect(throws: CTAP2Error.self) { try AuthenticatorInfo(cbor: Self.map(doubled)) }
        #expect(Self.cborCode(duplicate) == .duplicateMapKey)
        let reversed = Array(info.entries.reversed())
        let unordered = #expect(throws: CTAP2Error.self) { try AuthenticatorInfo(cbor: Self.map(reversed)) }
        #expect(Self.cborCode(unordered) == .mapKeyOrder)
    }

    @Test func recordedNonShortestMakeCredentialReplyIsRefused() throws {
        // python-fido2's test_client _MC_RESP writes the 196-byte authData with a two-byte
        // length (59 00c4); test_ctap2's _MC_RESP is the same reply, canonical.
        let loose = try #require(Vectors.python("test_client/module/_MC_RESP"))
        let tight = try #require(Vectors.python("test_ctap2/module/_MC_RESP"))
        let error = #expect(throws: CTAP2Error.self) { try MakeCredentialResponse(cbor: loose.bytes) }
        #expect(Self.cborCode(error) == .nonCanonicalEncoding)
        let response = try MakeCredentialResponse(cbor: tight.bytes)
        #expect(response.authData.bytes == Vectors.python("test_ctap2/module/_AUTH_DATA_MC")?.bytes)
    }

    @Test func clientBuiltAttestationObjectIsReadLeniently() throws {
        // The attestation object is the client's map (WebAuthn §6.5.4): the W3C registration's,
        // rewritten with "authData" before "fmt", still parses; its authData stays strict.
        let vector = try #require(Vectors.w3c(Self.group, "registration/attestationObject"))
        let object = try #require(try CBORDecoder(options: .ctap2).decode(vector.bytes).mapValue)
        let reordered = Self.map(Array(object.entries.reversed()))
        #expect(throws: CBORError.self) { try CBORDecoder(options: .ctap2).decode(reordered) }
        #expect(try AttestationObject(cbor: reordered) == AttestationObject(cbor: vector.bytes))
        let doubled = Self.map([object.entries[0]] + object.entries)
        let error = #expect(throws: CTAP2Error.self) { try AttestationObject(cbor: doubled) }
        #expect(Self.cborCode(error) == .duplicateMapKey)
    }
}
