import _SecurityKeyInternals
import CBOR
import CTAP2
import Testing
import WebAuthnVerification

/// ES256K and ML-DSA on the host, against other projects' bytes: Wycheproof's secp256k1 vectors
/// and python-fido2's recorded ML-DSA-87 registration.
@Suite("COSE algorithms: ES256K and ML-DSA")
struct COSEAlgorithmVectorTests {
    /// C2SP/wycheproof testvectors/ecdsa_secp256k1_sha256_test.json (commit 2f387d2), the first
    /// test group: its key, and the message "123400" every case signs.
    enum Wycheproof {
        static let point = Hex.decode(
            "04b838ff44e5bc177bf21189d0766082fc9d843226887fc9760371100b7ee20a6ff0c9d75bfba7b31a6bca1974496eeb56de357071955d83c4b1badaa0b21832e9"
        ) ?? []
        static let keyDER = Hex.decode(
            "3056301006072a8648ce3d020106052b8104000a03420004b838ff44e5bc177bf21189d0766082fc9d843226887fc9760371100b7ee20a6ff0c9d75bfba7b31a6bca1974496eeb56de357071955d83c4b1badaa0b21832e9"
        ) ?? []
        static let message = Hex.decode("313233343030") ?? []
        /// (tcId, signature, result) for cases whose result is "valid" or "invalid".
        static let cases: [(Int, String, Bool)] = [
            (
                1,
                "3046022100813ef79ccefa9a56f7ba805f0e478584fe5f0dd5f567bc09b5123ccbc9832365022100900e75ad233fcc908509dbff5922647db37c21f4afd3203ae8dc4ae7794b0f87",
                true
            ),
            (
                3,
                "3045022100813ef79ccefa9a56f7ba805f0e478584fe5f0dd5f567bc09b5123ccbc983236502206ff18a52dcc0336f7af62400a6dd9b810732baf1ff758000d6f613a556eb31ba",
                true
            ),
            (
                4,
                "308145022100813ef79ccefa9a56f7ba805f0e478584fe5f0dd5f567bc09b5123ccbc983236502206ff18a52dcc0336f7af62400a6dd9b810732baf1ff758000d6f613a556eb31ba",
                false
            ),
            (
                5,
                "30820045022100813ef79ccefa9a56f7ba805f0e478584fe5f0dd5f567bc09b5123ccbc983236502206ff18a52dcc0336f7af62400a6dd9b810732baf1ff758000d6f613a556eb31ba",
                false
            ),
            (
                6,
                "3046022100813ef79ccefa9a56f7ba805f0e478584fe5f0dd5f567bc09b5123ccbc983236502206ff18a52dcc0336f7af62400a6dd9b810732baf1ff758000d6f613a556eb31ba",
                false
            ),
            (
                20,
                "3047022100813ef79ccefa9a56f7ba805f0e478584fe5f0dd5f567bc09b5123ccbc983236502206ff18a52dcc0336f7af62400a6dd9b810732baf1ff758000d6f613a556eb31ba0000",
                false
            ),
            (19, "30", false),
        ]
    }

    /// The secp256k1 key as a COSE_Key (RFC 8812 §3.1: kty EC2, crv 8).
    static func secp256k1Key(_ point: [UInt8] = Wycheproof.point) throws -> COSEKey {
        try COSEKey(map: [
            1: 2, 3: -47, -1: 8, .int(-2): .byteString(Array(point[1...32])),
            .int(-3): .byteString(Array(point[33...])),
        ])
    }

    @Test func wycheproofSecp256k1SignaturesVerifyAsES256K() throws {
        let key = try Self.secp256k1Key()
        #expect(key.algorithm == .es256K && key.curve == .secp256k1)
        let publicKey = try key.publicKey()
        #expect(publicKey.kindName == "secp256k1")
        #expect(publicKey.spkiDERRepresentation == Wycheproof.keyDER, "Wycheproof's keyDer")
        #expect(publicKey.defaultAlgorithm == .es256K)
        for (tcID, hex, valid) in Wycheproof.cases {
            let signature = try #require(Hex.decode(hex))
            var verified = true
            do {
                try key.verifySignature(signature, for: Wycheproof.message)
            } catch {
                #expect(error.code == .verificationFailed, "tcId \(tcID)")
                verified = false
            }
            #expect(verified == valid, "tcId \(tcID) is \(valid ? "valid" : "invalid")")
        }
        // The same signature over another message, or under ES256's name, does not verify.
        let good = try #require(Hex.decode(Wycheproof.cases[1].1))
        #expect(throws: WebAuthnVerificationError.self) { try key.verifySignature(good, for: [0x31]) }
        #expect(throws: WebAuthnVerificationError.self) {
            try publicKey.verifySignature(good, for: Wycheproof.message, algorithm: .es256)
        }
    }

    @Test func offCurveAndMalformedSecp256k1KeysAreRefused() throws {
        var offCurve = Wycheproof.point
        offCurve[64] ^= 0x01
        #expect(throws: CTAP2Error.self) { try Self.secp256k1Key(offCurve).publicKey() }
        let short = try COSEKey(map: [1: 2, 3: -47, -1: 8, -2: .byteString([1, 2]), -3: .byteString([3])])
        #expect(throws: CTAP2Error.self) { try short.publicKey() }
    }

    /// python-fido2 tests/test_attestation.py test_mldsa87_attestation: a packed registration
    /// whose credential key and attestation certificate key are both ML-DSA-87.
    @Test func pythonFIDO2MLDSA87RegistrationVerifies() throws {
        let response = try MakeCredentialResponse(
            cbor: try #require(Vectors.python("test_attestation/test_mldsa87_attestation/resp")).bytes)
        let clientDataHash = try #require(Vectors.python("test_attestation/test_mldsa87_attestation/client_data_hash"))
            .bytes
        let credentialKey = try #require(response.authData.attestedCredentialData?.credentialPublicKey)
        #expect(credentialKey.keyType == .akp && credentialKey.algorithm == .mlDSA87)
        let credentialPublicKey = try credentialKey.publicKey()
        #expect(credentialPublicKey.kindName == "ML-DSA-87")
        // An ML-DSA-87 SubjectPublicKeyInfo (RFC 9881): 2,610 bytes of content after 4 of header.
        #expect(credentialPublicKey.spkiDERRepresentation.count == 2614)

        #expect(response.attestationStatement["alg"] == .int(-50))
        let signature = try #require(response.attestationStatement["sig"]?.bytesValue)
        #expect(signature.count == 4627, "FIPS 204 Table 2")
        let certificate = try #require(response.attestationStatement["x5c"]?.arrayValue?.first?.bytesValue)
        // The certificate's SubjectPublicKeyInfo is found by the encoding this library writes for
        // an ML-DSA-87 key: the same header, then the 2,592-byte key.
        let header = Array(credentialPublicKey.spkiDERRepresentation.prefix(22))
        let start = try #require(Self.firstIndex(of: header, in: certificate))
        try #require(certificate.count >= start + 22 + 2592)
        let attestationKey = try COSEKey(map: [
            1: 7, 3: -50, .int(-1): .byteString(Array(certificate[(start + 22)..<(start + 22 + 2592)])),
        ])
        let signed = response.authData.bytes + clientDataHash
        try attestationKey.verifySignature(signature, for: signed)
        #expect(throws: WebAuthnVerificationError.self) {
            try attestationKey.verifySignature(signature, for: signed + [0])
        }
        #expect(throws: WebAuthnVerificationError.self) {
            try attestationKey.verifySignature(flipped(signature), for: signed)
        }
        // The credential's own key did not make this signature.
        #expect(throws: WebAuthnVerificationError.self) { try credentialKey.verifySignature(signature, for: signed) }
    }

    @Test func malformedMLDSAKeysAreRefused() throws {
        let short = try COSEKey(map: [1: 7, 3: -49, -1: .byteString([UInt8](repeating: 1, count: 2592))])
        #expect(throws: CTAP2Error.self) { try short.publicKey() }
        let unknown = try COSEKey(map: [1: 7, 3: -48, -1: .byteString([UInt8](repeating: 1, count: 1312))])
        #expect((try? unknown.publicKey()) == nil)
        let noAlgorithm = try COSEKey(map: [1: 7, -1: .byteString([UInt8](repeating: 1, count: 1952))])
        #expect(throws: CTAP2Error.self) { try noAlgorithm.publicKey() }
    }

    static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        return (0...(haystack.count - needle.count)).first { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}
