import CBOR
import CTAP2
import Crypto
import Testing

@testable import WebAuthnVerification

/// Signatures (WebAuthn §6.5.6) from the W3C WebAuthn Level 3 test vectors and
/// python-fido2's tests/test_cose.py vectors.
@Suite struct SignatureTests {
    @Test(arguments: Vectors.w3cGroups)
    func assertionSignatureVerifies(_ group: String) throws {
        let registration = try AttestationObject(
            cbor: try #require(Vectors.w3c(group, "registration/attestationObject")).bytes)
        let key = try #require(registration.authData.attestedCredentialData?.credentialPublicKey)
        let authData = try #require(Vectors.w3c(group, "authentication/authenticatorData")).bytes
        let clientData = try #require(Vectors.w3c(group, "authentication/clientDataJSON")).bytes
        let signature = try #require(Vectors.w3c(group, "authentication/signature")).bytes
        let message = authData + Array(SHA256.hash(data: clientData))
        if key.algorithm == .ed448 {
            // swift-crypto has no Ed448: the key must be refused, not silently accepted.
            let error = #expect(throws: WebAuthnVerificationError.self) {
                try key.verifySignature(signature, for: message)
            }
            #expect(error?.code == .unsupportedAlgorithm)
            return
        }
        try key.verifySignature(signature, for: message)
        let badSignature = #expect(throws: WebAuthnVerificationError.self) {
            try key.verifySignature(flipped(signature, at: signature.count - 1), for: message)
        }
        #expect(badSignature?.code == .verificationFailed)
        let badMessage = #expect(throws: WebAuthnVerificationError.self) {
            try key.verifySignature(signature, for: flipped(message))
        }
        #expect(badMessage?.code == .verificationFailed)
        // The key also exports as SPKI DER and PEM that swift-crypto reads back.
        let spki = try key.publicKey().spkiDERRepresentation
        #expect(spki.first == 0x30)
        #expect(try key.publicKey().pemRepresentation.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
    }

    // MARK: COSE keys (python-fido2 tests/test_cose.py)

    struct COSECase: Sendable, CustomTestStringConvertible {
        var test: String
        var key: @Sendable () throws -> COSEKey
        var expectedAlgorithm: COSEAlgorithm
        var testDescription: String { test }
    }

    static func param(_ test: String, _ label: String) throws -> CBORValue {
        .byteString(try #require(Vectors.python("test_cose/TestCoseKey.\(test)/key:\(label)")).bytes)
    }

    static let coseCases: [COSECase] = [
        COSECase(
            test: "test_ES256_parse_verify",
            key: {
                try COSEKey(cbor: try #require(Vectors.python("test_cose/module/_ES256_KEY")).bytes)
            }, expectedAlgorithm: .es256),
        COSECase(
            test: "test_RS256_parse_verify",
            key: {
                try COSEKey(cbor: try #require(Vectors.python("test_cose/module/_RS256_KEY")).bytes)
            }, expectedAlgorithm: .rs256),
        COSECase(
            test: "test_EdDSA_parse_verify",
            key: {
                try COSEKey(cbor: try #require(Vectors.python("test_cose/module/_EdDSA_KEY")).bytes)
            }, expectedAlgorithm: .edDSA),
        // python-fido2 builds these two from their parameters: {1: 2, 3: -9, -1: 1, ...} and {1: 1, 3: -19, -1: 6, ...}.
        COSECase(
            test: "test_ESP256_parse_verify",
            key: {
                try COSEKey(map: [
                    1: 2, 3: -9, -1: 1, -2: param("test_ESP256_parse_verify", "-2"),
                    -3: param("test_ESP256_parse_verify", "-3"),
                ])
            }, expectedAlgorithm: .esp256),
        COSECase(
            test: "test_Ed25519_parse_verify",
            key: {
                try COSEKey(map: [1: 1, 3: -19, -1: 6, -2: param("test_Ed25519_parse_verify", "-2")])
            }, expectedAlgorithm: .ed25519),
    ]

    @Test(arguments: coseCases)
    func coseKeyVerifies(_ c: COSECase) throws {
        let key = try c.key()
        #expect(key.algorithm == c.expectedAlgorithm)
        let message = try #require(Vectors.python("test_cose/TestCoseKey.\(c.test)/arg-of:key.verify")).bytes
        let signature = try #require(Vectors.python("test_cose/TestCoseKey.\(c.test)/arg-of:key.verify#2"))
            .bytes
        try key.verifySignature(signature, for: message)
        #expect(throws: WebAuthnVerificationError.self) {
            try key.verifySignature(signature, for: flipped(message))
        }
        #expect(throws: WebAuthnVerificationError.self) {
            try key.verifySignature(flipped(signature, at: signature.count - 1), for: message)
        }
        if c.test == "test_RS256_parse_verify" {
            #expect(key.parameters[-1] == Self.rsaParam("-1"))
            #expect(key.parameters[-2] == Self.rsaParam("-2"))
        }
    }

    static func rsaParam(_ label: String) -> CBORValue? {
        Vectors.python("test_cose/TestCoseKey.test_RS256_parse_verify/key:\(label)").map {
            .byteString($0.bytes)
        }
    }
}
