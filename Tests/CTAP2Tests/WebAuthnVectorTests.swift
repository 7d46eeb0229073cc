import CBOR
import Crypto
import Testing
import X509

@testable import CTAP2

/// The W3C WebAuthn Level 3 test vectors (Tests/Vectors/webauthn-spec.json).
@Suite struct WebAuthnVectorTests {
    @Test func vectorsAreLoaded() {
        #expect(Vectors.webAuthn.filter { $0.kind == "attestationObject" }.count == 15)
        #expect(Vectors.webAuthn.filter { $0.kind == "authenticatorData" }.count == 15)
        #expect(Vectors.webAuthn.filter { $0.kind == "assertion-signature" }.count == 15)
    }

    @Test(arguments: Vectors.webAuthn.filter { $0.kind == "attestationObject" })
    func attestationObjectParses(_ vector: Vector) throws {
        let object = try AttestationObject(cbor: vector.bytes)
        #expect(object.format.rawValue == vector.format)
        let expected = try #require(vector.authData)
        expectMatches(object.authData, expected, vector.id)
        // The group's own aaguid and credential_id entries state the same values.
        let aaguid = try #require(Vectors.w3c(vector.group, "registration/aaguid"))
        let credentialID = try #require(Vectors.w3c(vector.group, "registration/credential_id"))
        #expect(object.authData.attestedCredentialData?.aaguid.bytes == aaguid.bytes)
        #expect(object.authData.attestedCredentialData?.credentialID == credentialID.bytes)
        let x5c = object.attestationStatement["x5c"]?.arrayValue
        #expect(x5c?.count == vector.x5cCount)
        // Re-encoding gives the canonical form the W3C generator wrote.
        #expect(object.cborEncoded == vector.bytes)
    }

    @Test(arguments: Vectors.webAuthn.filter { $0.kind == "authenticatorData" })
    func authenticatorDataParses(_ vector: Vector) throws {
        let parsed = try AuthenticatorData(bytes: vector.bytes)
        expectMatches(parsed, try #require(vector.authData), vector.id)
        #expect(parsed.bytes == vector.bytes)
    }

    /// Formats whose statements this module verifies; the others must say they cannot.
    static let verifiable: Set<String> = ["none", "packed", "fido-u2f"]

    @Test(arguments: Vectors.w3cGroups)
    func attestationStatementVerifies(_ group: String) throws {
        let object = try AttestationObject(
            cbor: try #require(Vectors.w3c(group, "registration/attestationObject")).bytes)
        let clientData = try #require(Vectors.w3c(group, "registration/clientDataJSON")).bytes
        let clientDataHash = Array(SHA256.hash(data: clientData))
        guard Self.verifiable.contains(object.format.rawValue) else {
            let error = #expect(throws: CTAP2Error.self) { try object.verify(clientDataHash: clientDataHash) }
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
        default: #expect(result.type == AttestationType.basic)
        }
        // A different client data hash must not verify (none has nothing to verify).
        if object.format != AttestationFormat.none {
            let error = #expect(throws: CTAP2Error.self) {
                try object.verify(clientDataHash: flipped(clientDataHash, at: 0))
            }
            #expect(error?.code == .verificationFailed)
            var tampered = object
            let sig = try #require(object.attestationStatement["sig"]?.bytesValue)
            tampered.attestationStatement["sig"] = .byteString(flipped(sig, at: sig.count - 1))
            #expect(throws: CTAP2Error.self) { try tampered.verify(clientDataHash: clientDataHash) }
        }
    }

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
            let error = #expect(throws: CTAP2Error.self) { try key.verifySignature(signature, for: message) }
            #expect(error?.code == .unsupportedAlgorithm)
            return
        }
        try key.verifySignature(signature, for: message)
        let badSignature = #expect(throws: CTAP2Error.self) {
            try key.verifySignature(flipped(signature, at: signature.count - 1), for: message)
        }
        #expect(badSignature?.code == .verificationFailed)
        let badMessage = #expect(throws: CTAP2Error.self) {
            try key.verifySignature(signature, for: flipped(message))
        }
        #expect(badMessage?.code == .verificationFailed)
        // The key also exports as SPKI DER and PEM that swift-crypto reads back.
        let spki = try key.publicKey().spkiDERRepresentation
        #expect(spki.first == 0x30)
        #expect(try key.publicKey().pemRepresentation.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
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
        let error = #expect(throws: CTAP2Error.self) {
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
        let error = #expect(throws: CTAP2Error.self) {
            try AttestationCertificates.checkPackedRequirements(cert, aaguid: aaguid)
        }
        #expect(error?.code == .invalidCertificate)
    }
}
