import CBOR
import CTAP2
import Testing
@testable import VirtualAuthenticator

@Suite("VirtualKey pinUvAuthTokens in makeCredential and getAssertion")
struct VirtualKeyPINTokenTests {
    static let protocols = [1, 2]

    /// A key with a credential for example.org made before the PIN was set, and the PIN "1234".
    static func keyWithPIN(
        _ configuration: VirtualKey.Configuration = .init(), version: Int
    ) async throws -> (VirtualKey, Platform, [UInt8]) {
        let key = try makeKey(configuration)
        let credential = try await register(key, rk: true)
        let platform = Platform(key: key, version: version)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        return (key, platform, credential.id)
    }

    @Test(arguments: protocols) func tokenSetsUVInMakeCredentialAndGetAssertion(version: Int) async throws {
        let (key, platform, credentialID) = try await Self.keyWithPIN(version: version)
        let token = try #require(try await platform.token(pin: "1234", permissions: PINSpec.mc).token)
        let made = try await send(key, Spec.makeCredential, platform.makeCredential(token: token))
        #expect(made.status == Spec.ok)
        #expect(try authData(made).userVerified && authData(made).userPresent)

        let assertionToken = try #require(
            try await platform.token(pin: "1234", permissions: PINSpec.ga).token)
        let asserted = try await send(key, Spec.getAssertion, platform.getAssertion(token: assertionToken))
        #expect(asserted.status == Spec.ok)
        #expect(try authData(asserted).userVerified && authData(asserted).userPresent)
        #expect(asserted.body?[1]?.mapValue?["id"] == .byteString(credentialID))
        // User names come with user verification.
        #expect(asserted.body?[4]?.mapValue?["name"] == "alice")
        // Legacy getPinToken grants mc and ga.
        let legacy = try #require(try await platform.token(pin: "1234", permissions: nil).token)
        #expect(
            try await send(key, Spec.makeCredential, platform.makeCredential(token: legacy)).status == Spec.ok
        )
    }

    @Test(arguments: protocols) func aProtectedKeyWantsATokenForMakeCredential(version: Int) async throws {
        let (key, _, _) = try await Self.keyWithPIN(version: version)
        #expect(
            try await send(key, Spec.makeCredential, makeCredentialRequest()).status == PINSpec.puatRequired)
        // getAssertion works without, and without UV.
        let reply = try await send(key, Spec.getAssertion, getAssertionRequest())
        #expect(reply.status == Spec.ok)
        #expect(try !authData(reply).userVerified)
        #expect(reply.body?[4] == .map(["id": .byteString([1, 2, 3, 4])]))

        // makeCredUvNotRqd: non-discoverable credentials without verification, not discoverable ones.
        let (relaxed, _, _) = try await Self.keyWithPIN(
            .init(options: ["rk": true, "up": true, "makeCredUvNotRqd": true]), version: version)
        let made = try await send(relaxed, Spec.makeCredential, makeCredentialRequest())
        #expect(made.status == Spec.ok)
        #expect(try !authData(made).userVerified)
        #expect(
            try await send(relaxed, Spec.makeCredential, makeCredentialRequest(options: ["rk": true])).status
                == PINSpec.puatRequired)
    }

    @Test(arguments: protocols) func permissionsAreEnforced(version: Int) async throws {
        let (key, platform, _) = try await Self.keyWithPIN(version: version)
        let gaOnly = try #require(try await platform.token(pin: "1234", permissions: PINSpec.ga).token)
        #expect(
            try await send(key, Spec.makeCredential, platform.makeCredential(token: gaOnly)).status
                == PINSpec.pinAuthInvalid)
        let mcOnly = try #require(try await platform.token(pin: "1234", permissions: PINSpec.mc).token)
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: mcOnly)).status
                == PINSpec.pinAuthInvalid)
        // A key offering credential management grants cm.
        let (managed, managedPlatform, _) = try await Self.keyWithPIN(
            .init(options: ["rk": true, "up": true, "credMgmt": true]), version: version)
        _ = managed
        #expect(try await managedPlatform.token(pin: "1234", permissions: PINSpec.cm).status == Spec.ok)

        // Which permissions a token may carry follows getInfo's options (§6.5.5.7.2–3 step 4).
        let options: [String: Bool] = [
            "rk": true, "up": true, "uv": true, "bioEnroll": true, "uvBioEnroll": true, "largeBlobs": true,
            "authnrCfg": true, "noMcGaPermissionsWithClientPin": true,
        ]
        let featured = Platform(key: try makeKey(.init(options: options)), version: version)
        #expect(try await featured.setPIN("1234") == Spec.ok)
        #expect(
            try await featured.token(pin: "1234", permissions: PINSpec.mc).status
                == PINSpec.unauthorizedPermission)
        #expect(
            try await featured.token(pin: "1234", permissions: PINSpec.ga).status
                == PINSpec.unauthorizedPermission)
        #expect(
            try await featured.token(pin: "1234", permissions: PINSpec.be | PINSpec.lbw | PINSpec.acfg).status
                == Spec.ok)
        #expect(
            try await featured.token(pin: "1234", permissions: PINSpec.cm).status
                == PINSpec.unauthorizedPermission)
        #expect(
            try await featured.uvToken(permissions: PINSpec.mc | PINSpec.ga | PINSpec.be).status == Spec.ok)
        #expect(
            try await featured.uvToken(permissions: PINSpec.acfg).status == PINSpec.unauthorizedPermission)
    }

    @Test(arguments: protocols) func tokensAreBoundToTheirRPID(version: Int) async throws {
        let (key, platform, _) = try await Self.keyWithPIN(version: version)
        let bound = try #require(
            try await platform.token(pin: "1234", permissions: PINSpec.mc, rpID: "example.org").token)
        #expect(
            try await send(key, Spec.makeCredential, platform.makeCredential(token: bound, rpID: "other.org"))
                .status
                == PINSpec.pinAuthInvalid)
        #expect(
            try await send(key, Spec.makeCredential, platform.makeCredential(token: bound)).status == Spec.ok)
    }

    @Test(arguments: protocols) func firstUseBindsTheRPID(version: Int) async throws {
        let (key, platform, _) = try await Self.keyWithPIN(version: version)
        let token = try #require(try await platform.token(pin: "1234", permissions: PINSpec.ga).token)
        let silent = try await send(key, Spec.getAssertion, platform.getAssertion(token: token, up: false))
        #expect(silent.status == Spec.ok)
        #expect(try authData(silent).userVerified && !authData(silent).userPresent)
        // Still usable (no presence collected), but now only for example.org.
        #expect(
            try await send(
                key, Spec.getAssertion, platform.getAssertion(token: token, rpID: "other.org", up: false)
            )
            .status == PINSpec.pinAuthInvalid)
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: token, up: false)).status
                == Spec.ok)
    }

    @Test(arguments: protocols) func aTokenIsUsedUpByARequestWithPresence(version: Int) async throws {
        let (key, platform, _) = try await Self.keyWithPIN(version: version)
        let token = try #require(try await platform.token(pin: "1234").token)
        #expect(try await send(key, Spec.getAssertion, platform.getAssertion(token: token)).status == Spec.ok)
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: token)).status
                == PINSpec.pinAuthInvalid)
        #expect(
            try await send(key, Spec.makeCredential, platform.makeCredential(token: token)).status
                == PINSpec.pinAuthInvalid)
        // A new token replaces the old one.
        let first = try #require(try await platform.token(pin: "1234").token)
        let second = try #require(try await platform.token(pin: "1234").token)
        #expect(
            try await send(key, Spec.makeCredential, platform.makeCredential(token: first)).status
                == PINSpec.pinAuthInvalid)
        #expect(
            try await send(key, Spec.makeCredential, platform.makeCredential(token: second)).status == Spec.ok
        )
    }

    @Test(arguments: protocols) func badPinUvAuthParams(version: Int) async throws {
        let (key, platform, _) = try await Self.keyWithPIN(version: version)
        let token = try #require(try await platform.token(pin: "1234").token)
        var request = platform.makeCredential(token: token)
        request[8] = .byteString([UInt8](repeating: 7, count: version == 1 ? 16 : 32))
        #expect(try await send(key, Spec.makeCredential, request).status == PINSpec.pinAuthInvalid)
        request = platform.makeCredential(token: token)
        request[9] = .int(version == 1 ? 2 : 1)
        #expect(try await send(key, Spec.makeCredential, request).status == PINSpec.pinAuthInvalid)
        request[9] = 3
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.invalidParameter)
        request[9] = nil
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.missingParameter)
        // A token from before a power cycle is gone.
        await key.powerCycle()
        #expect(
            try await send(key, Spec.makeCredential, platform.makeCredential(token: token)).status
                == PINSpec.pinAuthInvalid)
    }

    @Test func zeroLengthPinUvAuthParamProbe() async throws {
        let key = try makeKey()
        var request = makeCredentialRequest()
        request[8] = .byteString([])
        request[9] = 2
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.pinNotSet)
        #expect(try await Platform(key: key, version: 2).setPIN("1234") == Spec.ok)
        #expect(try await send(key, Spec.makeCredential, request).status == PINSpec.pinInvalid)
        var assertion = getAssertionRequest()
        assertion[6] = .byteString([])
        #expect(try await send(key, Spec.getAssertion, assertion).status == PINSpec.pinInvalid)
        await key.setUserPresence(.deny)
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.operationDenied)
    }

    @Test(arguments: protocols) func unusedTokensExpire(version: Int) async throws {
        let (key, platform, _) = try await Self.keyWithPIN(version: version)
        let token = try #require(try await platform.token(pin: "1234").token)
        await key.advanceClock(by: .seconds(20))
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: token, up: false)).status
                == PINSpec.pinAuthInvalid)
        let fresh = try #require(try await platform.token(pin: "1234").token)
        await key.advanceClock(by: .seconds(18))
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: fresh, up: false)).status
                == Spec.ok)
    }

    @Test(arguments: protocols) func usedTokensExpireAfterTheMaxUsagePeriod(version: Int) async throws {
        let (key, platform, _) = try await Self.keyWithPIN(version: version)
        let token = try #require(try await platform.token(pin: "1234").token)
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: token, up: false)).status
                == Spec.ok)
        await key.advanceClock(by: .seconds(300))
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: token, up: false)).status
                == Spec.ok)
        await key.advanceClock(by: .seconds(301))
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: token, up: false)).status
                == PINSpec.pinAuthInvalid)
    }

    @Test func configuredTokenLimits() async throws {
        let (key, platform, _) = try await Self.keyWithPIN(
            .init(tokenInitialUsageTimeLimit: .seconds(5), tokenMaxUsageTimePeriod: .seconds(60)), version: 2)
        let unused = try #require(try await platform.token(pin: "1234").token)
        await key.advanceClock(by: .seconds(6))
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: unused, up: false)).status
                == PINSpec.pinAuthInvalid)
        let used = try #require(try await platform.token(pin: "1234").token)
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: used, up: false)).status
                == Spec.ok)
        await key.advanceClock(by: .seconds(61))
        #expect(
            try await send(key, Spec.getAssertion, platform.getAssertion(token: used, up: false)).status
                == PINSpec.pinAuthInvalid)
    }
}
