import CBOR
import Crypto
import Foundation
import SecurityKeys
import Testing
import Transport
import VirtualAuthenticator

/// The provider API with a key that speaks only CTAP1/U2F, in process: registration and sign-in
/// checked by python-fido2's Fido2Server (fido-u2f attestation verified by its attestation
/// classes), `appid` and `appidExclude` against a credential the key made through raw U2F, and
/// the requests U2F cannot serve.
struct ProviderU2FTests {
    let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")
    let appID = "https://example.org/u2f-app-id.json"

    func controller(_ key: VirtualKey) -> SecurityKeyAuthorizationController {
        SecurityKeyAuthorizationController(sources: [.connection(InProcessConnection(handler: key))])
    }

    /// A U2F-era registration made directly on the key (U2F_REGISTER with SHA-256 of `application`):
    /// the key handle and the 65-byte public key, sliced by hand as FIDO U2F Raw Message Formats §4.3 lays
    /// them out.
    static func legacyRegistration(_ key: VirtualKey, application: String) async throws -> (handle: [UInt8], key: [UInt8]) {
        let data = randomBytes(32) + Array(SHA256.hash(data: Array(application.utf8)))
        let apdu: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x00, 0x00, UInt8(data.count)] + data + [0x00, 0x00]
        let reply = await key.handleU2F(apdu)
        try #require(reply.suffix(2) == [0x90, 0x00] && reply.count > 67)
        let length = Int(reply[66])
        try #require(reply.count > 67 + length)
        return (Array(reply[67..<(67 + length)]), Array(reply[1..<66]))
    }

    @Test func registerAndSignInVerifyInPythonFIDO2() async throws {
        let key = try VirtualKey(configuration: .ctap1Only())
        let controller = controller(key)
        let registrationChallenge = randomBytes(32)
        var registration = provider.createCredentialRegistrationRequest(
            challenge: registrationChallenge, displayName: "Anne", name: "anne@example.org", userID: [1, 2, 3])
        registration.attestationPreference = .direct
        registration.userVerificationPreference = .preferred
        let credential = try await controller.performRegistration(registration)
        let assertionChallenge = randomBytes(32)
        var assertion = provider.createCredentialAssertionRequest(challenge: assertionChallenge)
        assertion.allowedCredentials = [
            SecurityKeyCredentialDescriptor(credentialID: randomBytes(40)),
            SecurityKeyCredentialDescriptor(credentialID: credential.credentialID),
        ]
        let signIn = try await controller.performAssertion(assertion)
        #expect(signIn.credentialID == credential.credentialID)
        #expect(!signIn.appID)
        #expect(signIn.userID == nil)
        try await verifyWithPythonFIDO2(
            rpID: "example.org", registrationChallenge: registrationChallenge, registration: credential,
            assertionChallenge: assertionChallenge, assertion: signIn)
    }

    @Test func appIDSignInUsesTheAppIDApplication() async throws {
        let key = try VirtualKey(configuration: .ctap1Only())
        let legacy = try await Self.legacyRegistration(key, application: appID)
        var assertion = provider.createCredentialAssertionRequest(challenge: randomBytes(32))
        assertion.allowedCredentials = [SecurityKeyCredentialDescriptor(credentialID: legacy.handle)]
        let missing = await #expect(throws: SecurityKeyError.self) {
            try await controller(key).performAssertion(assertion)
        }
        #expect(missing?.code == .noCredentials)

        assertion.appID = appID
        let signIn = try await controller(key).performAssertion(assertion)
        #expect(signIn.appID)
        // The authenticator data names the AppID, and the U2F public key verifies the signature
        // over authenticatorData ‖ SHA-256(clientDataJSON) (WebAuthn §7.2 steps 15 and 20).
        #expect(Array(signIn.rawAuthenticatorData.prefix(32)) == Array(SHA256.hash(data: Array(appID.utf8))))
        #expect(signIn.rawAuthenticatorData.count == 37 && signIn.rawAuthenticatorData[32] & 0x01 == 1)
        let clientData = try #require(signIn.rawClientDataJSON)
        let publicKey = try P256.Signing.PublicKey(x963Representation: legacy.key)
        let signature = try P256.Signing.ECDSASignature(derRepresentation: signIn.signature)
        #expect(
            publicKey.isValidSignature(
                signature, for: signIn.rawAuthenticatorData + Array(SHA256.hash(data: clientData))))
    }

    @Test func appIDExcludeFindsTheLegacyRegistration() async throws {
        let key = try VirtualKey(configuration: .ctap1Only())
        let legacy = try await Self.legacyRegistration(key, application: appID)
        var registration = provider.createCredentialRegistrationRequest(
            challenge: randomBytes(32), displayName: "A", name: "a", userID: [1])
        registration.excludedCredentials = [SecurityKeyCredentialDescriptor(credentialID: legacy.handle)]
        // Under the RP ID alone the handle is not this key's for example.org: registration proceeds.
        _ = try await controller(key).performRegistration(registration)
        registration.appIDExclude = appID
        let excluded = await #expect(throws: SecurityKeyError.self) {
            try await controller(key).performRegistration(registration)
        }
        #expect(excluded?.code == .matchedExcludedCredential)
    }

    @Test func whatU2FCannotDoIsRefusedClearly() async throws {
        let key = try VirtualKey(configuration: .ctap1Only())
        var registration = provider.createCredentialRegistrationRequest(
            challenge: randomBytes(32), displayName: "A", name: "a", userID: [1])
        registration.userVerificationPreference = .required
        let noUV = await #expect(throws: SecurityKeyError.self) {
            try await controller(key).performRegistration(registration)
        }
        #expect(noUV?.code == .notHandled)
        registration.userVerificationPreference = .discouraged
        registration.residentKeyPreference = .required
        let noRK = await #expect(throws: SecurityKeyError.self) {
            try await controller(key).performRegistration(registration)
        }
        #expect(noRK?.code == .notHandled)
        // A discoverable sign-in (no allow list) cannot work with a key that stores nothing.
        let discoverable = await #expect(throws: SecurityKeyError.self) {
            try await controller(key).performAssertion(provider.createCredentialAssertionRequest(challenge: randomBytes(32)))
        }
        #expect(discoverable?.code == .noCredentials)
    }
}
