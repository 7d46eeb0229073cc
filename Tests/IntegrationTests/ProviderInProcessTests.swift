import Foundation
import SecurityKeys
import Testing
import Transport
import VirtualAuthenticator

/// The provider API end to end against virtual keys through in-process connections; results are
/// checked by python-fido2's server, not by our own CTAP2 code.
struct ProviderInProcessTests {
    let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")

    func controller(_ key: VirtualKey, interaction: (any SecurityKeyInteraction)? = nil)
        -> SecurityKeyAuthorizationController
    {
        SecurityKeyAuthorizationController(
            sources: [.connection(InProcessConnection(handler: key))], interaction: interaction)
    }

    @Test func registerAndSignInVerifyInPythonFIDO2() async throws {
        let key = try VirtualKey()
        let controller = controller(key)
        let registrationChallenge = randomBytes(32)
        var registration = provider.createCredentialRegistrationRequest(
            challenge: registrationChallenge, displayName: "Anne", name: "anne@example.org",
            userID: [1, 2, 3])
        registration.attestationPreference = .direct
        let credential = try await controller.performRegistration(registration)
        #expect(credential.transports.contains(.nfc))
        let clientData = try #require(credential.rawClientDataJSON)
        #expect(String(decoding: clientData, as: UTF8.self).contains("\"origin\":\"https://example.org\""))

        let assertionChallenge = randomBytes(32)
        var assertion = provider.createCredentialAssertionRequest(challenge: assertionChallenge)
        assertion.allowedCredentials = [
            SecurityKeyCredentialDescriptor(credentialID: credential.credentialID)
        ]
        let signIn = try await controller.performAssertion(assertion)
        #expect(signIn.credentialID == credential.credentialID)
        #expect(!signIn.appID)
        try await verifyWithPythonFIDO2(
            rpID: "example.org", registrationChallenge: registrationChallenge, registration: credential,
            assertionChallenge: assertionChallenge, assertion: signIn)
    }

    @Test func allowAndExcludeListsLongerThanMaxCredentialCountInList() async throws {
        let key = try VirtualKey(configuration: .init(maxCredentialCountInList: 3))
        let controller = controller(key)
        let created = try await controller.performRegistration(
            provider.createCredentialRegistrationRequest(
                challenge: randomBytes(32), displayName: "Bob", name: "bob", userID: [9]))
        // 10 unknown IDs (more than three chunks), one too long for the key, then the real one.
        let decoys = (0..<10).map { _ in SecurityKeyCredentialDescriptor(credentialID: randomBytes(48)) }
        let tooLong = SecurityKeyCredentialDescriptor(credentialID: randomBytes(200))
        let list = decoys + [tooLong, SecurityKeyCredentialDescriptor(credentialID: created.credentialID)]

        var assertion = provider.createCredentialAssertionRequest(challenge: randomBytes(32))
        assertion.allowedCredentials = list
        let signIn = try await controller.performAssertion(assertion)
        #expect(signIn.credentialID == created.credentialID)

        var again = provider.createCredentialRegistrationRequest(
            challenge: randomBytes(32), displayName: "Bob", name: "bob", userID: [9])
        again.excludedCredentials = list
        let error = await #expect(throws: SecurityKeyError.self) {
            try await controller.performRegistration(again)
        }
        #expect(error?.code == .matchedExcludedCredential)

        // Only decoys: registration works, sign-in finds nothing.
        again.excludedCredentials = decoys
        _ = try await controller.performRegistration(again)
        assertion.allowedCredentials = decoys
        let none = await #expect(throws: SecurityKeyError.self) {
            try await controller.performAssertion(assertion)
        }
        #expect(none?.code == .noCredentials)
    }

    @Test func discoverableSignInWithThreeAccountsAsksWhichOne() async throws {
        let key = try VirtualKey()
        let interaction = ScriptedInteraction(chooseUserID: Array("carol".utf8))
        let controller = controller(key, interaction: interaction)
        var ids: [String: [UInt8]] = [:]
        for name in ["alice", "bob", "carol"] {
            var request = provider.createCredentialRegistrationRequest(
                challenge: randomBytes(32), displayName: name.capitalized, name: name,
                userID: Array(name.utf8))
            request.residentKeyPreference = .required
            ids[name] = try await controller.performRegistration(request).credentialID
        }
        for _ in 0..<3 { _ = await drain(controller.statusUpdates) }
        let signIn = try await controller.performAssertion(
            provider.createCredentialAssertionRequest(challenge: randomBytes(32)))
        #expect(signIn.userID == Array("carol".utf8))
        #expect(signIn.credentialID == ids["carol"])
        let offered = interaction.offeredAccounts.withLock { $0 }
        // Without verification the key returns user IDs only (CTAP 2.1 §6.2.2 step 12).
        #expect(Set(offered.map(\.userID)) == Set(["alice", "bob", "carol"].map { Array($0.utf8) }))
        #expect(Set(offered.map(\.credentialID)) == Set(ids.values))
        let events = await drain(controller.statusUpdates)
        #expect(events.contains(.selectingAccount(count: 3)))
        #expect(events.last == .done)

        // Without anyone to ask, the choice cannot be made.
        let silent = self.controller(key)
        let error = await #expect(throws: SecurityKeyError.self) {
            try await silent.performAssertion(
                provider.createCredentialAssertionRequest(challenge: randomBytes(32)))
        }
        #expect(error?.code == .notInteractive)
    }

    @Test func pinProtectedKeyPromptsForThePIN() async throws {
        let key = try VirtualKey(configuration: .init(pin: "4321"))
        let interaction = ScriptedInteraction(pins: ["0000", "4321"])
        let controller = controller(key, interaction: interaction)
        let challenge = randomBytes(32)
        let credential = try await controller.performRegistration(
            provider.createCredentialRegistrationRequest(
                challenge: challenge, displayName: "Dan", name: "dan", userID: [4]))
        // First prompt with the key's full count, then one fewer after the wrong PIN.
        let prompts = interaction.pinPrompts.withLock { $0 }
        #expect(prompts.count == 2)
        if prompts.count == 2, let first = prompts[0], let second = prompts[1] {
            #expect(second == first - 1)
        }
        let events = await drain(controller.statusUpdates)
        #expect(events.contains { if case .pinNeeded = $0 { true } else { false } })
        // The authenticator data says the user was verified (UV flag, bit 2 of byte 32).
        let object = credential.rawAttestationObject
        #expect(!object.isEmpty)

        // No PIN given: the request is cancelled, not retried.
        let out = await #expect(throws: SecurityKeyError.self) {
            try await controller.performRegistration(
                provider.createCredentialRegistrationRequest(
                    challenge: challenge, displayName: "Dan", name: "dan", userID: [4]))
        }
        #expect(out?.code == .cancelled)
    }

    @Test func requiredVerificationWithoutPINSaysWhatToDo() async throws {
        let key = try VirtualKey()
        var request = provider.createCredentialAssertionRequest(challenge: randomBytes(32))
        request.userVerificationPreference = .required
        let error = await #expect(throws: SecurityKeyError.self) {
            try await controller(key).performAssertion(request)
        }
        #expect(error?.code == .pinNotSet)
    }

    @Test(arguments: [
        ("https://example.org", "example.org", SecurityKeyError.Code?.none),
        ("https://login.example.org", "example.org", nil),
        ("https://example.org", "other.org", .invalidRelyingParty),
        ("https://foo.github.io", "github.io", .invalidRelyingParty),
        ("http://example.org", "example.org", .invalidOrigin),
    ])
    func originsAreCheckedAgainstThePublicSuffixList(
        _ origin: String, _ rpID: String, _ expected: SecurityKeyError.Code?
    )
        async throws
    {
        let key = try VirtualKey()
        var request = SecurityKeyCredentialProvider(relyingPartyIdentifier: rpID)
            .createCredentialRegistrationRequest(
                challenge: randomBytes(32), displayName: "E", name: "e", userID: [5])
        request.clientData = .origin(origin)
        do {
            let result = try await controller(key).performRegistration(request)
            #expect(expected == nil)
            #expect(String(decoding: result.rawClientDataJSON ?? [], as: UTF8.self).contains(origin))
        } catch {
            #expect(error.code == expected)
        }
    }

    @Test func firstTouchedKeyWinsAndTheOthersAreCancelled() async throws {
        let idle = CancelCountingHandler(inner: try VirtualKey(userPresence: .never))
        // The touch comes late enough that the idle key has surely been asked too, however busy
        // the machine running the tests.
        let touched = try VirtualKey(userPresence: .approveAfter(.seconds(1)))
        let controller = SecurityKeyAuthorizationController(sources: [
            .connection(InProcessConnection(handler: idle, uri: "inprocess:idle")),
            .connection(InProcessConnection(handler: touched, uri: "inprocess:touched")),
        ])
        let credential = try await controller.performRegistration(
            provider.createCredentialRegistrationRequest(
                challenge: randomBytes(32), displayName: "F", name: "f", userID: [6]))
        #expect(credential.deviceURI == "inprocess:touched")
        #expect(idle.cancels.withLock { $0 } >= 1)
        let events = await drain(controller.statusUpdates)
        #expect(events.first == .selectingKey(count: 2))
    }

    @Test func callerCancellationStopsTheRequest() async throws {
        let key = CancelCountingHandler(inner: try VirtualKey(userPresence: .never))
        let controller = SecurityKeyAuthorizationController(sources: [
            .connection(InProcessConnection(handler: key))
        ])
        let request = provider.createCredentialRegistrationRequest(
            challenge: randomBytes(32), displayName: "G", name: "g", userID: [7])
        let task = Task { try await controller.performRegistration(request) }
        // Cancel once the key is waiting for a touch, whatever the machine's load.
        for await event in controller.statusUpdates {
            if case .touchNeeded = event { break }
        }
        task.cancel()
        let result = await task.result
        #expect(throws: SecurityKeyError.self) { try result.get() }
        #expect((try? result.get()) == nil)
        if case .failure(let error as SecurityKeyError) = result { #expect(error.code == .cancelled) }
        #expect(key.cancels.withLock { $0 } == 1)
    }

    @Test func noKeyBeforeTheDeadline() async throws {
        let controller = SecurityKeyAuthorizationController(sources: [])
        var request = provider.createCredentialAssertionRequest(challenge: randomBytes(32))
        request.timeout = .milliseconds(500)
        let error = await #expect(throws: SecurityKeyError.self) {
            try await controller.performAssertion(request)
        }
        #expect(error?.code == .noDevice)
    }
}

/// Built-in user verification: a failed match is retried, a blocked sensor falls back to the PIN.
struct ProviderUserVerificationTests {
    @Test func failedFingerprintsFallBackToThePIN() async throws {
        let key = try VirtualKey(
            configuration: .init(
                options: ["rk": true, "up": true, "uv": true], pin: "4321", maxUVRetries: 2),
            userVerification: .mismatch)
        let interaction = ScriptedInteraction(pins: ["4321"])
        let controller = SecurityKeyAuthorizationController(
            sources: [.connection(InProcessConnection(handler: key))], interaction: interaction)
        let credential = try await controller.performRegistration(
            SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")
                .createCredentialRegistrationRequest(
                    challenge: randomBytes(32), displayName: "H", name: "h", userID: [8]))
        #expect(!credential.credentialID.isEmpty)
        let events = await drain(controller.statusUpdates)
        #expect(events.contains(.userVerificationRetry(attemptsLeft: 1)))
        #expect(events.contains { if case .pinNeeded = $0 { true } else { false } })
        #expect(interaction.pinPrompts.withLock { $0.count } == 1)
    }
}

/// The FIDO AppID extension: a credential made under a legacy AppID is found through it.
struct ProviderAppIDTests {
    @Test func credentialUnderTheAppIDIsUsedAndReported() async throws {
        let appID = "https://example.org/u2f-app-id.json"
        let key = try VirtualKey()
        let controller = SecurityKeyAuthorizationController(sources: [
            .connection(InProcessConnection(handler: key))
        ])
        // A U2F-era credential, registered with the AppID as its RP ID (client data given as a hash).
        var legacy = SecurityKeyCredentialProvider(relyingPartyIdentifier: appID)
            .createCredentialRegistrationRequest(
                challenge: [1], displayName: "I", name: "i", userID: [9])
        legacy.clientData = .hash(randomBytes(32))
        let credential = try await controller.performRegistration(legacy)

        var assertion = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")
            .createCredentialAssertionRequest(challenge: randomBytes(32))
        assertion.allowedCredentials = [
            SecurityKeyCredentialDescriptor(credentialID: credential.credentialID)
        ]
        let missing = await #expect(throws: SecurityKeyError.self) {
            try await controller.performAssertion(assertion)
        }
        #expect(missing?.code == .noCredentials)

        assertion.appID = appID
        let signIn = try await controller.performAssertion(assertion)
        #expect(signIn.appID)
        #expect(signIn.credentialID == credential.credentialID)
    }
}
