import _SecurityKeyInternals
import CBOR
import CTAP2
import Crypto
import Testing

@testable import SecurityKeys

/// What `register --json`, `authenticate --json` and `decode --as client-data` print, from the
/// W3C WebAuthn L3 test vectors (§B, "none" attestation with ES256).
@Suite struct CommandDocumentTests {
    static func vector(_ id: String) throws -> [UInt8] {
        let entries = try VectorEntry.load("webauthn-spec.json")
        return try #require(entries.first { $0.id == "webauthn-spec/sctn-test-vectors-none-es256/\(id)" }).bytes
    }

    @Test func registrationDocumentCarriesTheAttestedKey() throws {
        let attestationObject = try Self.vector("registration/attestationObject")
        let credentialID = try Self.vector("registration/credential_id")
        let clientDataJSON = try Self.vector("registration/clientDataJSON")
        let registration = SecurityKeyCredentialRegistration(
            credentialID: credentialID, rawAttestationObject: attestationObject, rawClientDataJSON: clientDataJSON,
            transports: [], deviceURI: "udp:x")
        let attested = try SecurityKeyAttestedCredential(registration)
        #expect(attested.credential.credentialID == credentialID)
        #expect(attested.attestationObject.format.rawValue == "none")
        let hash = SecurityKeyClientData.origin("https://example.org").signedHash(json: clientDataJSON)
        #expect(hash == Array(SHA256.hash(data: clientDataJSON)))
        let json = attested.json(
            registration, relyingPartyIdentifier: "example.org", userHandle: [0xFB, 0xFF], clientDataHash: hash
        ).text()
        let id = Base64URL.encode(credentialID)
        #expect(json.hasPrefix(#"{"id":"\#(id)","rawId":"\#(id)","type":"public-key""#))
        #expect(json.contains(#""publicKeyAlgorithm":-7}"#))
        #expect(json.contains(#""rpId":"example.org","userId":"-_8","clientDataHash":"\#(Base64URL.encode(hash))","attestationFormat":"none""#))
        #expect(json.hasSuffix(#""device":"udp:x"}"#))
        // Parsed as the reader of the JSON parses it.
        let back = try PublicKeyCredentialJSON.registration(reading: Array(json.utf8), deviceURI: "udp:x")
        #expect(back.rawAttestationObject == attestationObject)
    }

    @Test func aRegistrationWithoutACredentialIsMalformed() throws {
        // An attestation object whose authData has no AT flag: 32-byte RP ID hash, flags 0x01, counter.
        let object = CBOREncoder.encode(
            .map([
                .textString("fmt"): .textString("none"), .textString("attStmt"): .map([:]),
                .textString("authData"): .byteString([UInt8](repeating: 0x33, count: 32) + [0x01, 0, 0, 0, 0]),
            ]))
        let registration = SecurityKeyCredentialRegistration(
            credentialID: [1], rawAttestationObject: object, rawClientDataJSON: nil, transports: [], deviceURI: "udp:x")
        let error = #expect(throws: CTAP2Error.self) { try SecurityKeyAttestedCredential(registration) }
        #expect(error?.code == .malformedResponse)
    }

    @Test func assertionDocumentHasTheFlagsAndCounter() throws {
        let authData = try Self.vector("authentication/authenticatorData")
        let parsed = try AuthenticatorData(bytes: authData)
        let assertion = SecurityKeyCredentialAssertion(
            credentialID: [0xFB, 0xFF], rawAuthenticatorData: authData, signature: [0x30], userID: nil,
            rawClientDataJSON: nil, appID: false, deviceURI: "udp:x")
        let json = assertion.json(relyingPartyIdentifier: "example.org", clientDataHash: [1], authData: parsed).text()
        #expect(json.contains(#""userHandle":null}"#))
        #expect(
            json.hasSuffix(
                #""rpId":"example.org","clientDataHash":"AQ","signCount":\#(parsed.signCount),"userPresent":\#(parsed.userPresent),"userVerified":\#(parsed.userVerified),"device":"udp:x"}"#
            ))
    }

    /// SHA-256("abc") (FIPS 180-2 appendix B.1) for a hash given as client data.
    @Test func signedHashOfAGivenHash() {
        let abc = Array(SHA256.hash(data: Array("abc".utf8)))
        #expect(Hex.encode(abc) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SecurityKeyClientData.hash(abc).signedHash(json: nil) == abc)
        #expect(SecurityKeyClientData.origin("https://example.org").signedHash(json: nil) == [])
    }

    /// `decode --as client-data` with the bounded JSON reader: the spec vector's members, its
    /// challenge in hex, its hash; malformed and duplicate-member documents are refused.
    /// `decode FILE`: a capture pasted as hex text (python-fido2's getInfo reply, with line
    /// breaks and spaces) is read as the bytes it spells; anything else as it is.
    @Test func aFileOfHexTextIsReadAsHex() throws {
        let entries = try VectorEntry.load("python-fido2-vectors.json")
        let vector = try #require(entries.first { $0.id == "python-fido2/test_ctap2/module/_INFO" })
        let hex = try #require(vector.hex)
        let text = hex.enumerated().map { $0.offset > 0 && $0.offset % 32 == 0 ? "\n\($0.element)" : "\($0.element)" }
            .joined() + " \r\n"
        #expect(StructureDecoder.input(fromFile: Array(text.utf8)) == vector.bytes)
        #expect(StructureDecoder.input(fromFile: vector.bytes) == vector.bytes)
        #expect(StructureDecoder.input(fromFile: Array("abc".utf8)) == Array("abc".utf8))
        #expect(StructureDecoder.input(fromFile: []) == [])
    }

    @Test func clientDataIsDecodedWithTheBoundedReader() throws {
        let clientDataJSON = try Self.vector("registration/clientDataJSON")
        let challenge = try Self.vector("registration/challenge")
        let text = try StructureDecoder.decode(clientDataJSON, as: .clientData).text()
        #expect(text.contains(#""type":"webauthn.create","challenge":"\#(Base64URL.encode(challenge))","challengeHex":"\#(Hex.encode(challenge))","origin":"https://example.org""#))
        #expect(text.contains(#""hash":"\#(Hex.encode(SHA256.hash(data: clientDataJSON)))""#))
        for bad in [#"[1]"#, #"{"type":"webauthn.get"}"#, #"{"type":"a","challenge":"AA","origin":"o","type":"b"}"#] {
            #expect(throws: StructureDecodingError.self) { try StructureDecoder.decode(Array(bad.utf8), as: .clientData) }
        }
        let extra = #"{"type":"webauthn.get","challenge":"AA","origin":"https://o","crossOrigin":true,"z":null,"a":[1]}"#
        let decoded = try StructureDecoder.decode(Array(extra.utf8), as: .clientData).text()
        #expect(decoded.contains(#""crossOrigin":true,"otherMembers":["a","z"],"#))
    }
}
