import CBOR
import Testing

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
}
