import Authenticators
import CTAP2
import Testing
import Transport
import VirtualAuthenticator

/// preferredPlatformUvAttempts (CTAP 2.1 §6.4) and the fall-back to the PIN, against a CTAP 2.2
/// virtual key whose built-in UV is made to fail.
struct PreferredUVAttemptsTests {
    func key(preferred: Int, maxUVRetries: Int = 8) throws -> VirtualKey {
        var configuration = VirtualKey.Configuration.ctap22(pin: "24681357", builtInUV: true)
        configuration.ctap22.preferredPlatformUVAttempts = preferred
        configuration.maxUVRetries = maxUVRetries
        return try VirtualKey(configuration: configuration)
    }

    func open(_ key: VirtualKey) async throws -> Authenticator {
        try await Authenticator.open(InProcessConnection(handler: key, uri: "test:key"), deadline: .after(.seconds(60)))
    }

    @Test(arguments: [1, 2, 3])
    func failedBuiltInUVIsTriedAsOftenAsTheKeyPrefersThenThePIN(preferred: Int) async throws {
        let key = try key(preferred: preferred)
        await key.setUserVerification(.mismatch)
        let authenticator = try await open(key)
        #expect(await authenticator.info.preferredPlatformUVAttempts == UInt64(preferred))
        let interaction = RecordingInteraction(pins: ["24681357"])
        let verification = try await authenticator.verifyUser(
            permissions: [.getAssertion], rpID: "example.org", interaction: interaction, deadline: .after(.seconds(60)))
        #expect(verification.token != nil)
        verification.wipe()
        let activities = interaction.activities.withLock { $0 }
        let retries = activities.filter { if case .userVerificationRetry = $0 { true } else { false } }
        #expect(retries.count == preferred - 1, "\(activities)")
        #expect(activities.contains(.fallingBackToPIN(deviceURI: "test:key")))
        #expect(interaction.prompts.withLock { $0.count } == 1)
        // The key's own counter: exactly `preferred` attempts were spent, UV is not blocked.
        let pin = try await authenticator.clientPIN()
        #expect(try await pin.uvRetries() == 8 - preferred)
    }

    @Test func uvBlockedOnTheKeyFallsBackToThePINWithoutTryingUV() async throws {
        let key = try key(preferred: 3, maxUVRetries: 2)
        await key.setUserVerification(.mismatch)
        let authenticator = try await open(key)
        // Block UV first (two failures), as another host could have done.
        let pin = try await authenticator.clientPIN()
        for _ in 0..<2 {
            await #expect(throws: CTAP2Error.self) { _ = try await pin.uvAuthToken(permissions: [.getAssertion]) }
        }
        #expect(try await pin.uvRetries() == 0)
        let interaction = RecordingInteraction(pins: ["24681357"])
        let verification = try await authenticator.verifyUser(
            permissions: [.getAssertion], rpID: "example.org", interaction: interaction, deadline: .after(.seconds(60)))
        #expect(verification.token != nil)
        verification.wipe()
        #expect(interaction.activities.withLock { $0.contains(.fallingBackToPIN(deviceURI: "test:key")) })
        #expect(interaction.prompts.withLock { $0.count } == 1)
    }

    @Test func matchingBuiltInUVNeedsNoPINAndCountsSinceThePIN() async throws {
        let key = try key(preferred: 3)
        let authenticator = try await open(key)
        let interaction = RecordingInteraction(pins: [])
        for _ in 0..<2 {
            let verification = try await authenticator.verifyUser(
                permissions: [.getAssertion], rpID: "example.org", interaction: interaction,
                deadline: .after(.seconds(60)))
            verification.wipe()
        }
        #expect(interaction.prompts.withLock { $0.isEmpty })
        _ = try await authenticator.refreshInfo(deadline: .after(.seconds(60)))
        #expect(await authenticator.info.uvCountSinceLastPINEntry == 2)
    }
}
