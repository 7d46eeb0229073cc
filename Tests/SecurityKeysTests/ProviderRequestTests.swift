import Foundation
import SecurityKeys
import Testing

/// The provider's request checks and WebAuthn JSON, without any key.
struct ProviderRequestTests {
    let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")

    @Test(arguments: [0, 31, 33])
    func clientDataHashesMustBeSHA256Sized(_ count: Int) async {
        var request = provider.createCredentialAssertionRequest(challenge: [1])
        request.clientData = .hash([UInt8](repeating: 7, count: count))
        request.timeout = .milliseconds(100)
        let controller = SecurityKeyAuthorizationController(sources: [])
        let error = await #expect(throws: SecurityKeyError.self) {
            try await controller.performAssertion(request)
        }
        #expect(error?.code == .invalidRequest)
    }

    @Test(arguments: [[UInt8](), [UInt8](repeating: 1, count: 65)])
    func userIDsAreOneTo64Bytes(_ userID: [UInt8]) async {
        let request = provider.createCredentialRegistrationRequest(
            challenge: [1], displayName: "A", name: "a", userID: userID)
        let controller = SecurityKeyAuthorizationController(sources: [])
        let error = await #expect(throws: SecurityKeyError.self) {
            try await controller.performRegistration(request)
        }
        #expect(error?.code == .invalidRequest)
    }

    @Test func defaultsFollowWebAuthn() {
        let request = provider.createCredentialRegistrationRequest(
            challenge: [1], displayName: "A", name: "a", userID: [1])
        // WebAuthn L3 §5.4: pubKeyCredParams ES256 first, residentKey discouraged, UV preferred,
        // attestation none; the default origin is https + RP ID.
        #expect(request.credentialParameters.map(\.rawValue) == [-7])
        #expect(request.residentKeyPreference.rawValue == "discouraged")
        #expect(request.userVerificationPreference.rawValue == "preferred")
        #expect(request.attestationPreference.rawValue == "none")
        #expect(request.clientData == .origin("https://example.org"))
    }

    @Test func registrationJSONUsesWebAuthnMemberNames() throws {
        // base64url of FB FF is "-_8" and of 01 02 03 is "AQID" (RFC 4648 §5 alphabet).
        let registration = SecurityKeyCredentialRegistration(
            credentialID: [0xFB, 0xFF], rawAttestationObject: [1, 2, 3], rawClientDataJSON: Array("{}".utf8),
            transports: [.nfc, .usb], deviceURI: "pcsc:x")
        let json = try #require(
            JSONSerialization.jsonObject(with: Data(registration.webAuthnJSON.utf8)) as? [String: Any])
        #expect(json["id"] as? String == "-_8")
        #expect(json["rawId"] as? String == "-_8")
        #expect(json["type"] as? String == "public-key")
        let response = try #require(json["response"] as? [String: Any])
        #expect(response["attestationObject"] as? String == "AQID")
        #expect(response["clientDataJSON"] as? String == "e30")
        #expect(response["transports"] as? [String] == ["nfc", "usb"])
    }

    @Test func assertionJSONCarriesUserHandleAndAppID() throws {
        let assertion = SecurityKeyCredentialAssertion(
            credentialID: [1, 2, 3], rawAuthenticatorData: [0xFB, 0xFF], signature: [1, 2, 3],
            userID: [0xFB, 0xFF],
            rawClientDataJSON: nil, appID: true, deviceURI: "udp:x")
        let json = try #require(
            JSONSerialization.jsonObject(with: Data(assertion.webAuthnJSON.utf8)) as? [String: Any])
        let response = try #require(json["response"] as? [String: Any])
        #expect(response["authenticatorData"] as? String == "-_8")
        #expect(response["signature"] as? String == "AQID")
        #expect(response["userHandle"] as? String == "-_8")
        #expect(response["clientDataJSON"] == nil)
        let extensions = try #require(json["clientExtensionResults"] as? [String: Any])
        #expect(extensions["appid"] as? Bool == true)
    }
}
