import Authenticators
import CTAP2
import Crypto
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// Fingerprint enrollment and built-in UV through the device layer, against the virtual key's
/// independent sensor: what the key stores and reports is read back from the key itself.
struct BioEnrollmentFlowTests {
    static func bioKey(samples: [ScriptedFingerprintSample] = [], maxUVRetries: Int = 8) -> VirtualKey.Configuration {
        var configuration = VirtualKey.Configuration.ctap21(pin: "1234").withFingerprintSensor(
            .init(samplesRequired: 3, captureTimeout: .seconds(20), samples: samples))
        configuration.maxUVRetries = maxUVRetries
        return configuration
    }

    func open(_ key: VirtualKey) async throws -> Authenticator {
        try await Authenticator.open(InProcessConnection(handler: key, uri: "test:bio"), deadline: .after(.seconds(5)))
    }

    static func feedback(_ name: String) -> ScriptedFingerprintSample { .feedback(FingerprintSampleFeedback(name: name)!) }

    @Test func enrollingReportsEachScriptedSampleAndTheKeyStoresTheTemplate() async throws {
        let key = try VirtualKey(configuration: Self.bioKey(samples: [
            Self.feedback("too-fast"), .feedback(.good), Self.feedback("too-skewed"), .feedback(.good),
        ]))
        let authenticator = try await open(key)
        #expect(await authenticator.info.options[.bioEnroll] == false)
        #expect(await authenticator.info.options[.userVerification] == false)
        let events = Mutex<[FingerprintEnrollmentEvent]>([])
        let interaction = RecordingInteraction(pins: ["1234"])
        let template = try await authenticator.enrollFingerprint(
            name: "index", interaction: interaction, deadline: .after(.seconds(10))
        ) { event in events.withLock { $0.append(event) } }.template
        let captured = events.withLock { list in
            list.compactMap { event -> (Int, UInt64, UInt64)? in
                if case .sampleCaptured(let n, let sample) = event { return (n, sample.status.rawValue, sample.remainingSamples) }
                return nil
            }
        }
        // The script's bytes (too-fast 0x05, too-skewed 0x08) and only good samples counting down.
        #expect(captured.map(\.0) == [1, 2, 3, 4, 5])
        #expect(captured.map(\.1) == [0x05, 0x00, 0x08, 0x00, 0x00])
        #expect(captured.map(\.2) == [3, 2, 2, 1, 0])
        let stored = await key.fingerprintEnrollments
        #expect(stored.map(\.id) == [template.id])
        #expect(stored.map(\.name) == ["index"])
        // getInfo was read again: a finger is enrolled, so built-in UV is configured.
        #expect(await authenticator.info.options[.bioEnroll] == true)
        #expect(await authenticator.info.options[.userVerification] == true)

        let listed = try await authenticator.fingerprints(interaction: RecordingInteraction(pins: ["1234"]), deadline: .after(.seconds(5)))
        #expect(listed == [FingerprintTemplate(id: template.id, friendlyName: "index")])
        try await authenticator.renameFingerprint(
            id: template.id, name: "thumb", interaction: RecordingInteraction(pins: ["1234"]), deadline: .after(.seconds(5)))
        #expect(await key.fingerprintEnrollments.map(\.name) == ["thumb"])
        try await authenticator.deleteFingerprint(
            id: template.id, interaction: RecordingInteraction(pins: ["1234"]), deadline: .after(.seconds(5)))
        #expect(await key.fingerprintEnrollments.isEmpty)
        #expect(await authenticator.info.options[.userVerification] == false)
        let missing = await #expect(throws: AuthenticatorError.self) {
            try await authenticator.deleteFingerprint(
                id: template.id, interaction: RecordingInteraction(pins: ["1234"]), deadline: .after(.seconds(5)))
        }
        #expect(missing?.ctap2Error?.code == .templateNotFound)
    }

    /// The enrollment's result keeps every sample's feedback, as the key's script gave it.
    @Test func theEnrollmentKeepsEachSamplesFeedback() async throws {
        let key = try VirtualKey(configuration: Self.bioKey(samples: [Self.feedback("too-fast"), .feedback(.good)]))
        let enrollment = try await open(key).enrollFingerprint(
            interaction: RecordingInteraction(pins: ["1234"]), deadline: .after(.seconds(10)))
        #expect(await key.fingerprintEnrollments.map(\.id) == [enrollment.template.id])
        #expect(enrollment.samples.map(\.number) == [1, 2, 3, 4])
        #expect(enrollment.samples.map(\.sample.status.rawValue) == [0x05, 0x00, 0x00, 0x00])
        #expect(enrollment.samples.map(\.sample.remainingSamples) == [3, 2, 1, 0])
    }

    @Test func cancellingAnEnrollmentTellsTheKey() async throws {
        // The second sample never comes: the key would wait 20 s for it.
        let key = try VirtualKey(configuration: Self.bioKey(samples: [.feedback(.good), .noFinger]))
        let authenticator = try await open(key)
        let cancellation = FingerprintEnrollmentCancellation()
        let clock = ContinuousClock()
        let start = clock.now
        let error = await #expect(throws: AuthenticatorError.self) {
            try await authenticator.enrollFingerprint(
                cancellation: cancellation, interaction: RecordingInteraction(pins: ["1234"]), deadline: .after(.seconds(30))
            ) { event in
                if case .waitingForSample(2) = event { cancellation.cancel() }
            }
        }
        #expect(error?.code == .cancelled)
        #expect(clock.now - start < .seconds(10))
        #expect(await key.fingerprintEnrollmentInProgress == false, "cancelCurrentEnrollment reached the key")
        #expect(await key.fingerprintEnrollments.isEmpty)
    }

    /// Makes a discoverable credential and returns its ID, with a PIN token.
    func register(_ authenticator: Authenticator) async throws -> [UInt8] {
        let token = try await authenticator.pinToken(
            permissions: [.makeCredential], rpID: "example.org", interaction: RecordingInteraction(pins: ["1234"]),
            deadline: .after(.seconds(5)))
        defer { token.wipe() }
        var request = MakeCredentialRequest(
            clientDataHash: Array(SHA256.hash(data: [1])), rp: RelyingPartyEntity(id: "example.org"),
            user: UserEntity(id: [7], name: "u"), pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)])
        try request.authorize(with: token)
        let response = try await authenticator.session.makeCredential(request, deadline: .after(.seconds(5)))
        return try #require(response.authData.attestedCredentialData?.credentialID)
    }

    func assert(_ authenticator: Authenticator, id: [UInt8], token: PINUVAuthToken) async throws -> GetAssertionResponse {
        var request = GetAssertionRequest(
            rpID: "example.org", clientDataHash: Array(SHA256.hash(data: [2])),
            allowList: [PublicKeyCredentialDescriptor(id: id)])
        try request.authorize(with: token)
        return try await authenticator.session.getAssertion(request, deadline: .after(.seconds(5)))
    }

    @Test func anEnrolledFingerVerifiesAndABlockedSensorFallsBackToThePIN() async throws {
        var configuration = Self.bioKey(maxUVRetries: 3)
        // The key asks the platform for as many attempts as it allows, so the host tries until
        // the sensor blocks (preferredPlatformUvAttempts; PreferredUVAttemptsTests covers fewer).
        configuration.ctap22.preferredPlatformUVAttempts = 3
        let key = try VirtualKey(configuration: configuration)
        let authenticator = try await open(key)
        _ = try await authenticator.enrollFingerprint(
            interaction: RecordingInteraction(pins: ["1234"]), deadline: .after(.seconds(10)))
        let id = try await register(authenticator)

        // The enrolled finger matches: a token from built-in UV, no PIN asked.
        let matching = RecordingInteraction()
        let verified = try await authenticator.verifyUser(
            permissions: [.getAssertion], rpID: "example.org", interaction: matching, deadline: .after(.seconds(5)))
        let uvToken = try #require(verified.token)
        #expect(matching.prompts.withLock { $0.isEmpty })
        let assertion = try await assert(authenticator, id: id, token: uvToken)
        uvToken.wipe()
        #expect(assertion.authData.userVerified)
        #expect(try await authenticator.uvRetries(deadline: .after(.seconds(5))) == 3)

        // Another finger: each miss spends a uvRetry until the sensor blocks, then the PIN.
        await key.setUserVerification(.mismatch)
        let falling = RecordingInteraction(pins: ["1234"])
        let fallback = try await authenticator.verifyUser(
            permissions: [.getAssertion], rpID: "example.org", interaction: falling, deadline: .after(.seconds(5)))
        let pinToken = try #require(fallback.token)
        let retries = falling.activities.withLock { list in
            list.compactMap { activity -> Int?? in
                if case .userVerificationRetry(_, let left) = activity { return left }
                return nil
            }
        }
        #expect(retries == [2, 1])
        #expect(falling.activities.withLock { $0.contains(.fallingBackToPIN(deviceURI: "test:bio")) })
        #expect(falling.prompts.withLock { $0.map(\.purpose) } == [.verify])
        #expect(try await authenticator.uvRetries(deadline: .after(.seconds(5))) == 0)
        let pinAssertion = try await assert(authenticator, id: id, token: pinToken)
        pinToken.wipe()
        #expect(pinAssertion.authData.userVerified)

        // A PIN verification refills nothing on the sensor; the key still reports it blocked.
        let blocked = await #expect(throws: AuthenticatorError.self) {
            _ = try await authenticator.builtInUVForTests()
        }
        #expect(blocked?.code == .uvBlocked)
    }
}

extension Authenticator {
    /// Asks the key for a built-in UV token directly (no PIN fallback).
    func builtInUVForTests() async throws(AuthenticatorError) -> PINUVAuthToken {
        let clientPIN = try clientPIN()
        do {
            return try await clientPIN.uvAuthToken(permissions: [.getAssertion], rpID: "example.org", deadline: .after(.seconds(5)))
        } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }
}
