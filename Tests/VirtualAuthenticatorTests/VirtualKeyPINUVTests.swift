import CBOR
import CTAP2
import Testing
@testable import VirtualAuthenticator

@Suite("VirtualKey built-in user verification")
struct VirtualKeyPINUVTests {
    static let uvConfiguration = VirtualKey.Configuration(
        options: ["rk": true, "up": true, "uv": true], maxUVRetries: 3)

    static func uvRetries(_ key: VirtualKey) async throws -> Int? {
        let reply = try await send(key, Spec.clientPIN, [1: 2, 2: .unsigned(PINSpec.getUVRetries)])
        try #require(reply.status == Spec.ok)
        return reply.body?[5]?.intValue
    }

    @Test func matchSetsUVAndCountsAsPresence() async throws {
        let key = try makeKey(Self.uvConfiguration, userPresence: .deny)
        let reply = try await send(key, Spec.makeCredential, makeCredentialRequest(options: ["uv": true]))
        #expect(reply.status == Spec.ok)
        #expect(try authData(reply).userVerified && authData(reply).userPresent)
        // A key with enabled built-in UV is protected: makeCredential needs verification.
        #expect(
            try await send(key, Spec.makeCredential, makeCredentialRequest()).status == PINSpec.puatRequired)
        #expect(try await Self.uvRetries(key) == 3)
    }

    @Test func mismatchesSpendRetriesUntilBlocked() async throws {
        let key = try makeKey(Self.uvConfiguration)
        _ = try await send(
            key, Spec.makeCredential, makeCredentialRequest(options: ["uv": true, "rk": true]))
        await key.setUserVerification(.mismatch)
        let request = getAssertionRequest(options: ["uv": true])
        #expect(try await send(key, Spec.getAssertion, request).status == PINSpec.uvInvalid)
        #expect(try await Self.uvRetries(key) == 2)
        #expect(try await send(key, Spec.getAssertion, request).status == PINSpec.uvInvalid)
        // A match in between refills the retries.
        await key.setUserVerification(.match)
        #expect(try await send(key, Spec.getAssertion, request).status == Spec.ok)
        #expect(try await Self.uvRetries(key) == 3)
        await key.setUserVerification(.mismatch)
        #expect(try await send(key, Spec.getAssertion, request).status == PINSpec.uvInvalid)
        #expect(try await send(key, Spec.getAssertion, request).status == PINSpec.uvInvalid)
        #expect(try await send(key, Spec.getAssertion, request).status == PINSpec.uvBlocked)
        #expect(try await Self.uvRetries(key) == 0)
        await key.setUserVerification(.match)
        #expect(try await send(key, Spec.getAssertion, request).status == PINSpec.uvBlocked)
        #expect(try await Platform(key: key, version: 2).uvToken().status == PINSpec.uvBlocked)
        // Without UV, assertions still work; reset unblocks.
        #expect(try await send(key, Spec.getAssertion, getAssertionRequest()).status == Spec.ok)
        await key.powerCycle()
        #expect(try await send(key, Spec.reset).status == Spec.ok)
        #expect(try await Self.uvRetries(key) == 3)
    }

    @Test(arguments: [1, 2]) func tokenFromBuiltInUV(version: Int) async throws {
        let key = try makeKey(Self.uvConfiguration, userPresence: .deny)
        let platform = Platform(key: key, version: version)
        let token = try #require(
            try await platform.uvToken(permissions: PINSpec.mc, rpID: "example.org").token)
        // The finger counted as presence: no touch is asked for within the user present time limit.
        let made = try await send(key, Spec.makeCredential, platform.makeCredential(token: token))
        #expect(made.status == Spec.ok)
        #expect(try authData(made).userVerified && authData(made).userPresent)

        await key.setUserVerification(.mismatch)
        #expect(try await platform.uvToken().status == PINSpec.uvInvalid)
        #expect(try await Self.uvRetries(key) == 2)
        #expect(try await platform.uvToken(permissions: 0).status == Spec.invalidParameter)
        #expect(
            try await platform.uvToken(permissions: PINSpec.acfg).status == PINSpec.unauthorizedPermission)

        let noUV = Platform(key: try makeKey(), version: version)
        #expect(try await noUV.uvToken().status == Spec.notAllowed)
        #expect(try await noUV.clientPIN(PINSpec.getUVRetries).status == Spec.notAllowed)
    }

    @Test func cachedPresenceExpires() async throws {
        let key = try makeKey(Self.uvConfiguration)
        _ = try await send(
            key, Spec.makeCredential, makeCredentialRequest(options: ["uv": true, "rk": true]))
        let platform = Platform(key: key, version: 2)
        let token = try #require(try await platform.uvToken(permissions: PINSpec.ga).token)
        // Use it silently, so that it outlives the initial usage limit.
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: token, up: false)).status
                == Spec.ok)
        await key.advanceClock(by: .seconds(20))
        await key.setUserPresence(.deny)
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: token)).status
                == Spec.operationDenied)
        await key.setUserPresence(.approve)
        let reply = try await send(key, Spec.getAssertion, platform.getAssertion(token: token))
        #expect(reply.status == Spec.ok)
        #expect(try authData(reply).userVerified && authData(reply).userPresent)
    }
}
