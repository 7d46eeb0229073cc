import Crypto
import Testing
import VirtualAuthenticator
import X509

@Suite("VirtualKey CTAP1/U2F")
struct VirtualKeyU2FTests {
    /// An extended-length APDU as FIDO U2F Raw Message Formats §3.1 frames it.
    static func apdu(ins: UInt8, p1: UInt8 = 0, data: [UInt8]) -> [UInt8] {
        [0x00, ins, p1, 0x00, 0x00, UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data + [0x00, 0x00]
    }

    @Test func registerAndAuthenticate() async throws {
        let key = try makeKey()
        let challenge = randomClientDataHash()
        let application = sha256("example.org")
        let reply = await key.handleU2F(Self.apdu(ins: 0x01, data: challenge + application))
        #expect(reply.suffix(2) == [0x90, 0x00])
        // Registration response (FIDO U2F Raw Message Formats §4.3).
        try #require(reply.count > 67)
        #expect(reply[0] == 0x05)
        let publicKey = Array(reply[1..<66])
        #expect(publicKey[0] == 0x04)
        let handleLength = Int(reply[66])
        try #require(reply.count > 67 + handleLength + 4)
        let keyHandle = Array(reply[67..<(67 + handleLength)])
        var rest = Array(reply[(67 + handleLength)..<(reply.count - 2)])
        // The certificate is one DER SEQUENCE with a two-byte long-form length.
        try #require(rest.count > 4 && rest[0] == 0x30 && rest[1] == 0x82)
        let certificateLength = 4 + (Int(rest[2]) << 8 | Int(rest[3]))
        try #require(rest.count > certificateLength)
        let certificate = try Certificate(derEncoded: Array(rest[0..<certificateLength]))
        rest.removeFirst(certificateLength)
        let attestationKey = try #require(P256.Signing.PublicKey(certificate.publicKey))
        let signed = [0x00] + application + challenge + keyHandle + publicKey
        #expect(
            attestationKey.isValidSignature(
                try P256.Signing.ECDSASignature(derRepresentation: rest), for: signed))

        // Check-only: a valid handle answers "conditions not satisfied".
        let authData = challenge + application + [UInt8(keyHandle.count)] + keyHandle
        #expect(await key.handleU2F(Self.apdu(ins: 0x02, p1: 0x07, data: authData)) == [0x69, 0x85])
        // Another application: wrong data.
        let foreign = challenge + sha256("evil.example") + [UInt8(keyHandle.count)] + keyHandle
        #expect(await key.handleU2F(Self.apdu(ins: 0x02, p1: 0x07, data: foreign)) == [0x6A, 0x80])

        let signature = await key.handleU2F(Self.apdu(ins: 0x02, p1: 0x03, data: authData))
        #expect(signature.suffix(2) == [0x90, 0x00])
        try #require(signature.count > 7)
        #expect(signature[0] == 0x01)
        let counter = Array(signature[1..<5])
        let credentialKey = try P256.Signing.PublicKey(x963Representation: publicKey)
        let assertionSignature = try P256.Signing.ECDSASignature(
            derRepresentation: Array(signature[5..<(signature.count - 2)]))
        #expect(
            credentialKey.isValidSignature(
                assertionSignature, for: application + [0x01] + counter + challenge))

        // The U2F registration is usable from CTAP2 for the matching rpId.
        let clientDataHash = randomClientDataHash()
        let ctap2 = try await send(
            key, Spec.getAssertion,
            getAssertionRequest(clientDataHash: clientDataHash, allowList: [keyHandle]))
        #expect(ctap2.status == Spec.ok)
        let ctap2AuthData = try #require(ctap2.body?[2]?.bytesValue)
        let ctap2Signature = try P256.Signing.ECDSASignature(
            derRepresentation: try #require(ctap2.body?[3]?.bytesValue))
        #expect(credentialKey.isValidSignature(ctap2Signature, for: ctap2AuthData + clientDataHash))
    }

    @Test func presenceIsReportedAsConditionsNotSatisfied() async throws {
        let key = try makeKey(userPresence: .never)
        let data = randomClientDataHash() + sha256("example.org")
        #expect(await key.handleU2F(Self.apdu(ins: 0x01, data: data)) == [0x69, 0x85])
    }

    @Test func unsupportedRequests() async throws {
        let key = try makeKey()
        #expect(await key.handleU2F([0x80, 0x03, 0x00, 0x00]) == [0x6E, 0x00])
        #expect(await key.handleU2F([0x00, 0x42, 0x00, 0x00]) == [0x6D, 0x00])
        #expect(await key.handleU2F([0x00, 0x01]) == [0x67, 0x00])
        #expect(await key.handleU2F(Self.apdu(ins: 0x01, data: [1, 2, 3])) == [0x67, 0x00])
        // Lc claims more data than present.
        #expect(await key.handleU2F([0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x40, 0x01]) == [0x67, 0x00])
        #expect(await key.handleU2F([0x00, 0x03, 0x00, 0x00]) == Array("U2F_V2".utf8) + [0x90, 0x00])
    }
}
