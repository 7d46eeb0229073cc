import CBOR
import Foundation
import TestProcesses
import Testing

@testable import CTAP2

/// Authenticator replies are hostile: every cut-short reply must fail with a typed error,
/// never trap, and the vector selections the parameterized tests run over must be complete.
@Suite struct HostileInputTests {
    @Test func vectorSelectionsAreComplete() {
        #expect(Vectors.pythonFIDO2.filter { $0.kind == "authenticatorData" }.count == 10)
        #expect(PythonFIDO2VectorTests.getInfoVectors.count == 3)
        #expect(PythonFIDO2VectorTests.makeCredentialVectors.count == 4)
        #expect(Vectors.w3cGroups.count == 15)
    }

    struct Reply: Sendable, CustomTestStringConvertible {
        var id: String
        var bytes: [UInt8]
        var parse: @Sendable ([UInt8]) throws -> Void
        var testDescription: String { id }
    }

    static let replies: [Reply] =
        PythonFIDO2VectorTests.getInfoVectors.map { v in
            Reply(id: v.id, bytes: v.bytes) { _ = try AuthenticatorInfo(cbor: $0) }
        }
        + PythonFIDO2VectorTests.canonicalMakeCredentialVectors.filter { $0.bytes.count < 2000 }.map { v in
            Reply(id: v.id, bytes: v.bytes) { _ = try MakeCredentialResponse(cbor: $0) }
        }
        + Vectors.pythonFIDO2.filter { $0.id.hasSuffix("_GA_RESP") }.map { v in
            Reply(id: v.id, bytes: v.bytes) { _ = try GetAssertionResponse(cbor: $0) }
        }
        + Vectors.webAuthn.filter { $0.kind == "attestationObject" && $0.bytes.count < 2000 }.map { v in
            Reply(id: v.id, bytes: v.bytes) { _ = try AttestationObject(cbor: $0) }
        }

    @Test(arguments: replies)
    func everyTruncationFailsWithATypedError(_ reply: Reply) throws {
        try reply.parse(reply.bytes)
        for length in 0..<reply.bytes.count {
            #expect(throws: CTAP2Error.self, "\(length) bytes") {
                try reply.parse(Array(reply.bytes.prefix(length)))
            }
        }
    }

    @Test func authDataWithHugeCredentialIDLengthIsRejected() {
        var bytes = [UInt8](repeating: 0, count: 37) + [UInt8](repeating: 0, count: 16) + [0xFF, 0xFF]
        bytes[32] = 0x41
        let error = #expect(throws: CTAP2Error.self) { try AuthenticatorData(bytes: bytes) }
        #expect(error?.code == .malformedResponse)
    }
}

/// Cross-checks the SPKI DER export of COSE keys against Python's `cryptography`
/// (SECURITYKEY_PYTHON), which builds each key from the same COSE parameters independently.
@Suite struct SPKICrossCheckTests {
    static let script = """
        import sys
        from fido2 import cbor
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
        for line in sys.stdin.read().split():
            k = cbor.decode(bytes.fromhex(line))
            if k[1] == 2:
                curve = {1: ec.SECP256R1(), 2: ec.SECP384R1(), 3: ec.SECP521R1()}[k[-1]]
                key = ec.EllipticCurvePublicKey.from_encoded_point(curve, b"\\x04" + k[-2] + k[-3])
            elif k[1] == 1:
                key = ed25519.Ed25519PublicKey.from_public_bytes(k[-2])
            else:
                key = rsa.RSAPublicNumbers(int.from_bytes(k[-2], "big"), int.from_bytes(k[-1], "big")).public_key()
            print(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo).hex())
        """

    @Test func spkiMatchesPythonCryptography() async throws {
        var keys: [COSEKey] = []
        for group in Vectors.w3cGroups {
            let vector = try #require(Vectors.w3c(group, "registration/attestationObject"))
            let key = try #require(
                try AttestationObject(cbor: vector.bytes).authData.attestedCredentialData?.credentialPublicKey
            )
            if key.algorithm != .ed448 { keys.append(key) }
        }
        for name in ["_ES256_KEY", "_RS256_KEY", "_EdDSA_KEY"] {
            keys.append(try COSEKey(cbor: try #require(Vectors.python("test_cose/module/\(name)")).bytes))
        }
        let input = keys.map { hexString($0.cborEncoded) }.joined(separator: "\n")
        let output = try await runPythonWithInput(Self.script, input)
        let expected = output.split(separator: "\n").map(String.init)
        #expect(expected.count == keys.count)
        for (key, spki) in zip(keys, expected) {
            #expect(hexString(try key.publicKey().spkiDERRepresentation) == spki)
        }
    }
}

func runPythonWithInput(_ script: String, _ input: String) async throws -> String {
    guard let python = TestProcess.pythonFIDO2 else {
        throw PythonUnavailable(
            "SECURITYKEY_PYTHON is not set; point it at a Python with python-fido2 (e.g. .venv/bin/python3).")
    }
    let output = try await TestProcess.run(python, ["-c", script], input: Data(input.utf8))
    guard output.status == 0 else { throw PythonUnavailable("Python failed: " + output.stderrText) }
    return output.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
}
