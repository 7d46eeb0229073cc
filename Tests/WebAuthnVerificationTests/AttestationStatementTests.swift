import CBOR
import CTAP2
import Crypto
import Testing
import X509

@testable import WebAuthnVerification

/// Attestation statements (WebAuthn §8) from the W3C WebAuthn Level 3 test vectors
/// (Tests/Vectors/webauthn-spec.json) and python-fido2's recorded vectors.
@Suite struct AttestationStatementTests {
    /// Formats whose statements this module verifies; the others must say they cannot.
    static let verifiable: Set<String> = [
        "none", "packed", "fido-u2f", "tpm", "android-key", "android-safetynet", "apple",
    ]

    @Test(arguments: Vectors.w3cGroups)
    func attestationStatementVerifies(_ group: String) throws {
        let object = try AttestationObject(
            cbor: try #require(Vectors.w3c(group, "registration/attestationObject")).bytes)
        let clientData = try #require(Vectors.w3c(group, "registration/clientDataJSON")).bytes
        let clientDataHash = Array(SHA256.hash(data: clientData))
        guard Self.verifiable.contains(object.format.rawValue) else {
            let error = #expect(throws: WebAuthnVerificationError.self) {
                try object.verify(clientDataHash: clientDataHash)
            }
            #expect(error?.code == .unsupportedAttestationFormat)
            return
        }
        let result = try object.verify(clientDataHash: clientDataHash)
        let x5cCount = object.attestationStatement["x5c"]?.arrayValue?.count ?? 0
        #expect(result.trustPath.count == x5cCount)
        switch object.format {
        case AttestationFormat.none: #expect(result.type == AttestationType.none)
        case AttestationFormat.packed:
            #expect(result.type == (x5cCount > 0 ? AttestationType.basic : AttestationType.selfAttestation))
        case AttestationFormat.tpm: #expect(result.type == AttestationType.attCA)
        case AttestationFormat.apple: #expect(result.type == AttestationType.anonCA)
        default: #expect(result.type == AttestationType.basic)
        }
        // A different client data hash must not verify (none has nothing to verify).
        if object.format != AttestationFormat.none {
            let error = #expect(throws: WebAuthnVerificationError.self) {
                try object.verify(clientDataHash: flipped(clientDataHash, at: 0))
            }
            #expect(error?.code == .verificationFailed)
            // apple carries no signature: its nonce extension binds the data.
            guard let sig = object.attestationStatement["sig"]?.bytesValue else { return }
            var tampered = object
            tampered.attestationStatement["sig"] = .byteString(flipped(sig, at: sig.count - 1))
            #expect(throws: WebAuthnVerificationError.self) {
                try tampered.verify(clientDataHash: clientDataHash)
            }
        }
    }

    @Test func packedCertificateAAGUIDExtensionMustMatch() throws {
        // python-fido2's packed attestation certificate carries id-fido-gen-ce-aaguid.
        let prefix = "test_attestation/TestAttestationObject.test_packed_attestation/"
        let der = try #require(Vectors.python(prefix + "key:'x5c'")).bytes
        let authData = try AuthenticatorData(
            bytes: try #require(Vectors.python(prefix + "arg-of:AuthenticatorData")).bytes)
        let cert = try #require(try AttestationCertificates.parse(["x5c": [.byteString(der)]])?.first)
        let ext = try #require(cert.extensions[oid: AttestationCertificates.aaguidExtension])
        #expect(!ext.critical)
        let aaguid = try #require(authData.attestedCredentialData?.aaguid)
        try AttestationCertificates.checkPackedRequirements(cert, aaguid: aaguid)
        let other = try #require(AAGUID(bytes: [UInt8](repeating: 0xAB, count: 16)))
        let error = #expect(throws: WebAuthnVerificationError.self) {
            try AttestationCertificates.checkPackedRequirements(cert, aaguid: other)
        }
        #expect(error?.code == .verificationFailed)
    }

    @Test func certificateWithoutAttestationSubjectIsRejected() throws {
        // The W3C TPM test certificate has an empty subject, which packed attestation forbids.
        let object = try AttestationObject(
            cbor: try #require(Vectors.w3c("sctn-test-vectors-tpm-es256", "registration/attestationObject"))
                .bytes)
        let cert = try #require(try AttestationCertificates.parse(object.attestationStatement)?.first)
        let aaguid = try #require(object.authData.attestedCredentialData?.aaguid)
        let error = #expect(throws: WebAuthnVerificationError.self) {
            try AttestationCertificates.checkPackedRequirements(cert, aaguid: aaguid)
        }
        #expect(error?.code == .invalidCertificate)
    }

    // MARK: Attestation statements (python-fido2 tests/test_attestation.py)

    func statementParts(_ test: String) throws -> (
        sig: [UInt8], x5c: [UInt8], authData: AuthenticatorData, hash: [UInt8]
    ) {
        let prefix = "test_attestation/TestAttestationObject.\(test)/"
        return (
            try #require(Vectors.python(prefix + "key:'sig'")).bytes,
            try #require(Vectors.python(prefix + "key:'x5c'")).bytes,
            try AuthenticatorData(
                bytes: try #require(Vectors.python(prefix + "arg-of:AuthenticatorData")).bytes),
            try #require(Vectors.python(prefix + "client_param")).bytes
        )
    }

    @Test func packedAttestationVerifies() throws {
        let p = try statementParts("test_packed_attestation")
        let statement: CBORMap = ["alg": -7, "sig": .byteString(p.sig), "x5c": [.byteString(p.x5c)]]
        let object = AttestationObject(format: .packed, authData: p.authData, attestationStatement: statement)
        let result = try object.verify(clientDataHash: p.hash)
        #expect(result.type == .basic)
        #expect(result.trustPath.count == 1)
        var bad = object
        bad.attestationStatement["sig"] = .byteString(
            [UInt8](repeating: UInt8(ascii: "a"), count: p.sig.count))
        let error = #expect(throws: WebAuthnVerificationError.self) { try bad.verify(clientDataHash: p.hash) }
        #expect(error?.code == .verificationFailed)
    }

    @Test func fidoU2FAttestationVerifies() throws {
        let p = try statementParts("test_fido_u2f_attestation")
        let statement: CBORMap = ["sig": .byteString(p.sig), "x5c": [.byteString(p.x5c)]]
        let object = AttestationObject(
            format: .fidoU2F, authData: p.authData, attestationStatement: statement)
        let result = try object.verify(clientDataHash: p.hash)
        #expect(result.type == .basic)
        #expect(result.trustPath.count == 1)
        var bad = object
        bad.attestationStatement["sig"] = .byteString(
            [UInt8](repeating: UInt8(ascii: "a"), count: p.sig.count))
        let error = #expect(throws: WebAuthnVerificationError.self) { try bad.verify(clientDataHash: p.hash) }
        #expect(error?.code == .verificationFailed)
    }

    @Test(arguments: ["test_none_attestation", "test_none_windows_hello_attestation"])
    func noneAttestation(_ test: String) throws {
        let vector = try #require(
            Vectors.python("test_attestation/TestAttestationObject.\(test)/arg-of:AuthenticatorData"))
        let authData = try AuthenticatorData(bytes: vector.bytes)
        let hash =
            Array("deadbeef".utf8) + Array("deadbeef".utf8) + Array("deadbeef".utf8) + Array("deadbeef".utf8)
        let none = AttestationObject(
            format: AttestationFormat.none, authData: authData, attestationStatement: [:])
        #expect(try none.verify(clientDataHash: hash).type == AttestationType.none)
        let notEmpty = AttestationObject(
            format: AttestationFormat.none, authData: authData, attestationStatement: ["not": "empty"])
        #expect(throws: WebAuthnVerificationError.self) { try notEmpty.verify(clientDataHash: hash) }
    }

    @Test func packedAttestationFromFullResponseVerifies() throws {
        // TestAttestationObject.test_packed_attestation in tests/test_ctap2.py.
        let vector = try #require(
            Vectors.python("test_ctap2/TestAttestationObject.test_packed_attestation/arg-of:cbor.decode"))
        let hash = try #require(
            Vectors.python(
                "test_ctap2/TestAttestationObject.test_packed_attestation/arg-of:Attestation.for_type(att.fmt)().verify"
            )
        ).bytes
        let object = try MakeCredentialResponse(cbor: vector.bytes).attestationObject
        #expect(try object.verify(clientDataHash: hash).type == .basic)
        #expect(throws: WebAuthnVerificationError.self) { try object.verify(clientDataHash: flipped(hash)) }
    }

    @Test func mldsaAttestationIsRefusedNotPassed() throws {
        // python-fido2's test_mldsa87_attestation: swift-certificates cannot read ML-DSA keys yet,
        // so the statement must fail with a typed error rather than verify by omission.
        let vector = try #require(Vectors.python("test_attestation/test_mldsa87_attestation/resp"))
        let hash = try #require(Vectors.python("test_attestation/test_mldsa87_attestation/client_data_hash"))
            .bytes
        let object = try MakeCredentialResponse(cbor: vector.bytes).attestationObject
        #expect(object.authData.attestedCredentialData?.credentialPublicKey.algorithm?.rawValue == -50)
        let error = #expect(throws: WebAuthnVerificationError.self) {
            try object.verify(clientDataHash: hash)
        }
        #expect(error?.code == .invalidCertificate)
    }
}
