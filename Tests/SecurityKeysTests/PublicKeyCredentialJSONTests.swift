import Crypto
import Foundation
import SecurityKeys
import Testing

/// The one WebAuthn PublicKeyCredential JSON codec: what it writes is Foundation's sorted
/// serialization of itself (the form securitykeyd answers with), and what it writes reads back
/// into the same value; hostile documents are refused with the member named.
struct PublicKeyCredentialJSONTests {
    /// A `none` attestation object written by hand: {"fmt": "none", "attStmt": {}, "authData":
    /// 37 bytes (RP ID hash of 0x11, flags UP, counter 7)}.
    static let attestationObject: [UInt8] =
        [0xA3, 0x63] + Array("fmt".utf8) + [0x64] + Array("none".utf8) + [0x67] + Array("attStmt".utf8) + [0xA0]
        + [0x68] + Array("authData".utf8) + [0x58, 0x25] + [UInt8](repeating: 0x11, count: 32) + [0x01, 0, 0, 0, 7]

    static let first = [UInt8](repeating: 0xA1, count: 32)
    static let second = [UInt8](repeating: 0xB2, count: 32)

    static func registration() -> SecurityKeyCredentialRegistration {
        var registration = SecurityKeyCredentialRegistration(
            credentialID: [1, 2, 3, 0xFF], rawAttestationObject: attestationObject,
            rawClientDataJSON: Array(#"{"type":"webauthn.create"}"#.utf8), transports: [.usb, .nfc],
            deviceURI: "udp:test")
        registration.prf = SecurityKeyPRFRegistrationOutput(
            isSupported: true, first: SymmetricKey(data: first), second: SymmetricKey(data: second))
        registration.hmacCreateSecret = true
        registration.credentialProperties = SecurityKeyCredentialProperties(residentKey: false)
        registration.credentialBlobStored = false
        registration.appIDExclude = true
        registration.largeBlob = SecurityKeyLargeBlobRegistrationOutput(isSupported: true)
        return registration
    }

    static func assertion() -> SecurityKeyCredentialAssertion {
        var assertion = SecurityKeyCredentialAssertion(
            credentialID: [9, 8, 7], rawAuthenticatorData: [UInt8](repeating: 0x22, count: 37), signature: [0x30, 0x01],
            userID: [0x55, 0x66], rawClientDataJSON: Array(#"{"type":"webauthn.get"}"#.utf8), appID: true,
            deviceURI: "udp:test")
        assertion.prf = SecurityKeyPRFAssertionOutput(first: SymmetricKey(data: first), second: SymmetricKey(data: second))
        assertion.hmacGetSecret = SecurityKeyHMACSecretOutput(output1: SymmetricKey(data: second))
        assertion.credentialBlob = [0xEE]
        assertion.largeBlob = SecurityKeyLargeBlobAssertionOutput(readData: [1, 2], didWrite: nil)
        return assertion
    }

    /// Foundation's serialization with sorted keys, the codec's compact form before it existed.
    func foundationSorted(_ json: String) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8))
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    @Test func writtenFormIsFoundationsSortedForm() throws {
        let registration = Self.registration().webAuthnJSON
        let assertion = Self.assertion().webAuthnJSON
        #expect(try foundationSorted(registration) == registration)
        #expect(try foundationSorted(assertion) == assertion)
        #expect(registration.hasPrefix(#"{"authenticatorAttachment":"cross-platform","clientExtensionResults":{"#))
        #expect(assertion.contains(#""userHandle":"VWY""#))
    }

    @Test func readsBackWhatItWrites() throws {
        let registration = Self.registration()
        // The authenticator data has no extension outputs, as the value written has none.
        let read = try PublicKeyCredentialJSON.registration(
            reading: Array(registration.webAuthnJSON.utf8), deviceURI: "udp:test")
        #expect(read == registration)
        let assertion = Self.assertion()
        #expect(
            try PublicKeyCredentialJSON.assertion(reading: Array(assertion.webAuthnJSON.utf8), deviceURI: "udp:test")
                == assertion)
    }

    @Test func documentedOrderWithBesideMembers() {
        var assertion = Self.assertion()
        assertion.userID = nil
        let text = PublicKeyCredentialJSON.assertion(assertion, absentUserHandle: .null, beside: [("rpId", "x")]).text()
        let names = ["\"id\"", "\"rawId\"", "\"type\"", "\"authenticatorAttachment\"", "\"clientDataJSON\"",
            "\"userHandle\":null", "\"clientExtensionResults\"", "\"rpId\""]
        let positions = names.compactMap { text.range(of: $0)?.lowerBound }
        #expect(positions.count == names.count)
        #expect(positions == positions.sorted())
    }

    @Test(arguments: [
        (#"[]"#, "wrong-type"),
        (#"{"rawId":"AQ"}"#, "missing-member"),
        (#"{"rawId":"A","response":{}}"#, "invalid-value"),
        (#"{"rawId":"AQ","response":{"authenticatorData":"AA","signature":"AA","clientDataJSON":"AA"},"clientExtensionResults":{"prf":{"results":{"first":"AA"}}}}"#, "invalid-value"),
        (#"{"rawId":"AQ","response":{"authenticatorData":"AA","signature":"AA","clientDataJSON":"AA"},"clientExtensionResults":{"appid":"yes"}}"#, "wrong-type"),
        (#"{"rawId":"AQ","rawId":"AQ"}"#, "malformed-json"),
    ])
    func refusesHostileAssertions(json: String, code: String) {
        let error = #expect(throws: WebAuthnJSONError.self) {
            try PublicKeyCredentialJSON.assertion(reading: Array(json.utf8), deviceURI: "x")
        }
        #expect(error?.code.rawValue == code)
        #expect(error?.message.isEmpty == false)
    }
}
