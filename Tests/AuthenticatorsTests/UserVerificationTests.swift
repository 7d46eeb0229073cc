import Authenticators
import CTAP2
import Testing
import Transport
import VirtualAuthenticator

/// PIN/UV tokens through the device layer, against the virtual key's independent clientPIN.
struct UserVerificationTests {
    static let pinKey = VirtualKey.Configuration(
        versions: ["FIDO_2_0", "FIDO_2_1"],
        options: ["rk": true, "up": true, "plat": false, "pinUvAuthToken": true], pin: "1234")

    func open(_ key: VirtualKey) async throws -> Authenticator {
        try await Authenticator.open(InProcessConnection(handler: key, uri: "test:key"), deadline: .after(.seconds(5)))
    }

    @Test func aWrongPINIsAskedAgainWithTheAttemptsTheKeyReports() async throws {
        let key = try VirtualKey(configuration: Self.pinKey)
        let authenticator = try await open(key)
        let interaction = RecordingInteraction(pins: ["0000", "1234"])
        let verification = try await authenticator.verifyUser(
            permissions: [.makeCredential], rpID: "example.org", interaction: interaction, deadline: .after(.seconds(5)))
        #expect(verification.token?.permissions == [.makeCredential])
        #expect(verification.token?.rpID == "example.org")
        verification.wipe()
        // CTAP 2.1 §6.5.2.2: a fresh key has 8 PIN retries; one wrong PIN leaves 7.
        #expect(interaction.prompts.withLock { $0.map(\.attemptsLeft) } == [8, 7])
        #expect(interaction.prompts.withLock { $0.map(\.purpose) } == [.verify, .verify])
        // The right PIN refilled the counter: no attempt was spent that the user did not make.
        #expect(try await authenticator.pinRetries(deadline: .after(.seconds(5))).retries == 8)
    }

    @Test func aBlockedPINIsReportedWithoutAskingForIt() async throws {
        let key = try VirtualKey(configuration: Self.pinKey)
        let authenticator = try await open(key)
        // Spend all 8 attempts, power-cycling whenever the key demands it (after 3 in a row).
        var spent = 0
        for _ in 0..<20 where spent < 8 {
            let interaction = RecordingInteraction(pins: ["0000"])
            do throws(AuthenticatorError) {
                _ = try await authenticator.pinToken(
                    permissions: [.getAssertion], rpID: nil, interaction: interaction, deadline: .after(.seconds(5)))
            } catch {
                if error.ctap2Error?.code == .pinAuthBlocked { await key.powerCycle() }
            }
            spent += interaction.prompts.withLock { $0.count } > 0 ? 1 : 0
        }
        #expect(spent == 8)
        #expect(try await authenticator.pinRetries(deadline: .after(.seconds(5))).retries == 0)
        let interaction = RecordingInteraction(pins: ["1234"])
        let error = await #expect(throws: AuthenticatorError.self) {
            _ = try await authenticator.verifyUser(
                permissions: [.getAssertion], rpID: nil, interaction: interaction, deadline: .after(.seconds(5)))
        }
        #expect(error?.code == .pinBlocked)
        #expect(interaction.prompts.withLock { $0.isEmpty }, "nobody is asked for a PIN that cannot be used")
    }

    @Test func withoutAnyoneToAskThePINPathIsRefused() async throws {
        let authenticator = try await open(try VirtualKey(configuration: Self.pinKey))
        let error = await #expect(throws: AuthenticatorError.self) {
            _ = try await authenticator.verifyUser(
                permissions: [.getAssertion], rpID: nil, interaction: RecordingInteraction(canPrompt: false),
                deadline: .after(.seconds(5)))
        }
        #expect(error?.code == .notInteractive)
    }

    @Test func aForcedPINChangeAsksForTheNewPINThenTheCurrentOneAndUsesTheNewOne() async throws {
        var configuration = Self.pinKey
        configuration.forcePINChange = true
        let key = try VirtualKey(configuration: configuration)
        let authenticator = try await open(key)
        #expect(await authenticator.info.forcePINChange == true)
        let interaction = RecordingInteraction(pins: ["24681357", "1234"])
        let verification = try await authenticator.verifyUser(
            permissions: [.getAssertion], rpID: "example.org", interaction: interaction, deadline: .after(.seconds(5)))
        #expect(verification.token != nil)
        verification.wipe()
        #expect(interaction.prompts.withLock { $0.map(\.purpose) } == [.newPIN, .currentForChange])
        #expect(await authenticator.info.forcePINChange != true, "getInfo was read again after the change")
        // The key itself now takes the new PIN and refuses the old one.
        let pin = try await authenticator.clientPIN()
        _ = try await pin.pinUVAuthToken(pin: "24681357", permissions: [.getAssertion])
        await #expect(throws: CTAP2Error.self) {
            _ = try await pin.pinUVAuthToken(pin: "1234", permissions: [.getAssertion])
        }
    }

    @Test func blockedBuiltInUVFallsBackToThePIN() async throws {
        let key = try VirtualKey(
            configuration: .init(
                versions: ["FIDO_2_0", "FIDO_2_1"],
                options: ["rk": true, "up": true, "plat": false, "uv": true, "pinUvAuthToken": true], pin: "1234",
                maxUVRetries: 2))
        await key.setUserVerification(.mismatch)
        let authenticator = try await open(key)
        let interaction = RecordingInteraction(pins: ["1234"])
        let verification = try await authenticator.verifyUser(
            permissions: [.getAssertion], rpID: "example.org", interaction: interaction, deadline: .after(.seconds(5)))
        #expect(verification.token != nil)
        verification.wipe()
        let activities = interaction.activities.withLock { $0 }
        #expect(activities.contains(.userVerificationRetry(deviceURI: "test:key", attemptsLeft: 1)))
        #expect(activities.contains(.fallingBackToPIN(deviceURI: "test:key")))
        #expect(interaction.prompts.withLock { $0.count } == 1)
    }
}
