import Authenticators
import CTAP2
import Testing
import Transport
import VirtualAuthenticator

/// PIN status, verification and the blocked-PIN path, against the virtual key's clientPIN.
@Suite struct PINAdministrationTests {
    func open(_ key: VirtualKey) async throws -> Authenticator {
        try await Authenticator.open(
            InProcessConnection(handler: key, uri: "test:key"), deadline: .after(.seconds(5)))
    }

    @Test func verifyingTheRightPINReportsTheFullCount() async throws {
        let authenticator = try await open(try VirtualKey(configuration: UserVerificationTests.pinKey))
        // CTAP 2.1 §6.5.2.2: eight attempts on a fresh key.
        #expect(try await authenticator.verifyPIN("1234", deadline: .after(.seconds(5))) == 8)
    }

    @Test func aWrongPINIsReportedWithTheAttemptsLeft() async throws {
        let authenticator = try await open(try VirtualKey(configuration: UserVerificationTests.pinKey))
        let error = await #expect(throws: AuthenticatorError.self) {
            _ = try await authenticator.verifyPIN("0000", deadline: .after(.seconds(5)))
        }
        #expect(error?.code.rawValue == CTAP2Error.Code.pinInvalid.rawValue)
        #expect(error?.retriesLeft == 7)
        let status = try await authenticator.pinStatus(deadline: .after(.seconds(5)))
        #expect(status.isSet == true)
        #expect(status.retries == 7)
        #expect(!status.isBlocked)
    }

    @Test func aKeyWithoutAPINSaysSo() async throws {
        let authenticator = try await open(try VirtualKey())
        let status = try await authenticator.pinStatus(deadline: .after(.seconds(5)))
        #expect(status.isSet == false)
        // getPINRetries answers without a PIN too: a fresh key's full count (CTAP 2.1 §6.5.2.2).
        #expect(status.retries == 8)
        #expect(!status.isBlocked)
        let error = await #expect(throws: AuthenticatorError.self) {
            _ = try await authenticator.verifyPIN("1234", deadline: .after(.seconds(5)))
        }
        #expect(error?.code == .pinNotSet)
    }

    @Test func aBlockedPINIsExplainedWithWhatAResetErases() async throws {
        let key = try VirtualKey(configuration: UserVerificationTests.pinKey)
        let authenticator = try await open(key)
        var left = 8
        for _ in 0..<20 where left > 0 {
            do throws(AuthenticatorError) {
                _ = try await authenticator.verifyPIN("0000", deadline: .after(.seconds(5)))
            } catch {
                if error.ctap2Error?.code == .pinAuthBlocked { await key.powerCycle() }
                if let retries = error.retriesLeft { left = retries }
                if error.code == .pinBlocked { left = 0 }
            }
        }
        let status = try await authenticator.pinStatus(deadline: .after(.seconds(5)))
        #expect(status.isBlocked)
        let error = await #expect(throws: AuthenticatorError.self) {
            _ = try await authenticator.verifyPIN("1234", deadline: .after(.seconds(5)))
        }
        #expect(error?.code == .pinBlocked)
        #expect(error?.message.contains("reset") == true)
        #expect(error?.message.contains("erases") == true)
    }

    /// `config always-uv on|off`: the key's own getInfo says what changed; asking for the state
    /// it is in already sends nothing and asks no PIN.
    @Test func alwaysUVIsSetToWhatIsAskedAndOnlyToggledWhenNeeded() async throws {
        let key = try VirtualKey(configuration: .ctap21(pin: "1234"))
        let authenticator = try await open(key)
        let interaction = RecordingInteraction(pins: ["1234", "1234"])
        let unchanged = try await authenticator.setAlwaysUV(false, interaction: interaction, deadline: .after(.seconds(5)))
        #expect(unchanged == (false, false))
        #expect(interaction.prompts.withLock { $0.isEmpty })
        let on = try await authenticator.setAlwaysUV(true, interaction: interaction, deadline: .after(.seconds(5)))
        #expect(on == (true, true))
        // Another handle's fresh getInfo agrees: the key turned it on.
        #expect(try await open(key).info.options.isEnabled(.alwaysUV))
        let again = try await authenticator.setAlwaysUV(true, interaction: interaction, deadline: .after(.seconds(5)))
        #expect(again == (true, false))
        #expect(interaction.prompts.withLock { $0.count } == 1, "one PIN, for the one toggle")
    }

    @Test func credentialManagementAndConfigAreRefusedOnKeysWithoutThem() async throws {
        let authenticator = try await open(try VirtualKey(configuration: UserVerificationTests.pinKey))
        let interaction = RecordingInteraction(pins: ["1234"])
        let cm = await #expect(throws: AuthenticatorError.self) {
            _ = try await authenticator.credentialMetadata(
                interaction: interaction, deadline: .after(.seconds(5)))
        }
        #expect(cm?.code == .notSupported)
        let config = await #expect(throws: AuthenticatorError.self) {
            try await authenticator.toggleAlwaysUV(interaction: interaction, deadline: .after(.seconds(5)))
        }
        #expect(config?.code == .notSupported)
        #expect(interaction.prompts.withLock { $0.isEmpty }, "nobody was asked for a PIN")
    }
}
