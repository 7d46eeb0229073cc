import SecurityKeys
import Testing
import VirtualAuthenticator

/// `SecurityKeyAccountChoice.check`: a key holding one account for the relying party signs in
/// with it without offering a choice, so a choice by user handle is checked afterwards.
struct ProviderAccountCheckTests {
    @Test func aSignInAsAnotherAccountIsRefusedByUserHandle() async throws {
        let controller = SecurityKeyAuthorizationController(
            sources: [.connection(InProcessConnection(handler: try VirtualKey(), uri: "inprocess:accounts"))])
        let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")
        var registration = provider.createCredentialRegistrationRequest(
            challenge: [UInt8](repeating: 1, count: 32), displayName: "Anne", name: "anne", userID: [0xA1])
        registration.residentKeyPreference = .required
        _ = try await controller.performRegistration(registration, deadline: .after(.seconds(10)))
        let assertion = try await controller.performAssertion(
            provider.createCredentialAssertionRequest(challenge: [UInt8](repeating: 2, count: 32)),
            deadline: .after(.seconds(10)))
        #expect(assertion.userID == [0xA1], "the key's one account for the site")

        try SecurityKeyAccountChoice.userID([0xA1]).check(assertion)
        try SecurityKeyAccountChoice.name("someone else").check(assertion)
        try SecurityKeyAccountChoice.ask.check(assertion)
        let refused = #expect(throws: SecurityKeyError.self) {
            try SecurityKeyAccountChoice.userID([0xB2]).check(assertion)
        }
        #expect(refused?.code == .noCredentials)
        #expect(refused?.message == "The key's account for this site is user ID oQ, not the one asked for.")
    }
}
