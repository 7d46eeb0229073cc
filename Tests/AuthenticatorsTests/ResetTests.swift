import Authenticators
import CTAP2
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// A key that answers getInfo with a hand-encoded map and authenticatorReset with a fixed
/// status after reporting that it waits for a touch; it records every command byte.
final class FakeResetKey: AuthenticatorConnection {
    let descriptor: DeviceDescriptor
    let capabilities: TransportCapabilities = [.cbor]
    let info: [UInt8]
    let resetStatus: UInt8
    let commands = Mutex<[UInt8]>([])

    /// getInfo {1: ["FIDO_2_1"], 3: 16 zero bytes} followed by `extra` (CBOR key-value pairs,
    /// counted in `extraCount`).
    init(transport: TransportKind, extra: [UInt8], extraCount: UInt8, resetStatus: UInt8 = 0x00) {
        descriptor = DeviceDescriptor(uri: "fake:reset", transport: transport)
        info =
            [0xA2 + extraCount, 0x01, 0x81, 0x68] + Array("FIDO_2_1".utf8) + [0x03, 0x50]
            + [UInt8](repeating: 0, count: 16) + extra
        self.resetStatus = resetStatus
    }

    func transact(
        _ command: TransportCommand, payload: [UInt8], deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        let byte = payload.first ?? 0
        commands.withLock { $0.append(byte) }
        switch byte {
        case 0x04: return [0x00] + info
        case 0x07:
            keepalive(.userPresenceNeeded)
            return [resetStatus]
        default: return [0x01]
        }
    }

    func close() async {}
}

/// authenticatorReset through the device layer: the power-up window, re-insertion watched with
/// hotplug events (ScriptedDiscovery over in-process virtual keys), and the same-key check.
@Suite struct ResetTests {
    /// The key's reset window; tests step the key's clock past it rather than sleep, so a
    /// loaded machine cannot close the window again after a re-insertion.
    static let window = Duration.seconds(10)

    static func pinKey(aaguid: [UInt8]) throws -> VirtualKey {
        try VirtualKey(
            configuration: .init(
                aaguid: aaguid, versions: ["FIDO_2_0", "FIDO_2_1"],
                options: ["rk": true, "up": true, "plat": false, "pinUvAuthToken": true], resetWindow: window,
                pin: "1234"))
    }

    static let aaguidA = [UInt8](repeating: 0xA1, count: 16)
    static let aaguidB = [UInt8](repeating: 0xB2, count: 16)

    /// Waits (bounded) until `interaction` has been told to re-insert the key.
    static func waitForReinsertInstruction(_ interaction: RecordingInteraction) async throws {
        for _ in 0..<500 where !interaction.instructionKinds.contains(.reinsertToReset) {
            try await Task.sleep(for: .milliseconds(10))
        }
        try #require(interaction.instructionKinds.contains(.reinsertToReset))
    }

    @Test func aKeyInsideItsWindowIsResetAtOnce() async throws {
        let key = try VirtualKey(
            configuration: .init(versions: ["FIDO_2_0", "FIDO_2_1"], pin: "1234"),
            userPresence: .approveAfter(.milliseconds(200)))
        let discovery = ScriptedDiscovery([("key", key)])
        let directory = AuthenticatorDirectory(discoveries: [discovery])
        let authenticator = try await directory.open(uri: "test:key", deadline: .after(.seconds(60)))
        #expect(await authenticator.info.options[.clientPIN] == true)
        let interaction = RecordingInteraction()
        let result = try await directory.reset(
            authenticator, interaction: interaction, deadline: .after(.seconds(60)))
        #expect(result === authenticator)
        // The key itself, asked again, has no PIN any more (CTAP 2.1 §6.6 erases it).
        #expect(await result.info.options[.clientPIN] == false)
        #expect(interaction.instructionKinds == [.touchToReset])
        #expect(discovery.subscriptions.withLock { $0 } == 0, "no re-insertion was needed")
    }

    @Test func aKeyOutsideItsWindowIsResetAfterTheSameKeyIsReinserted() async throws {
        let key = try Self.pinKey(aaguid: Self.aaguidA)
        let discovery = ScriptedDiscovery([("key", key)])
        let directory = AuthenticatorDirectory(discoveries: [discovery])
        let authenticator = try await directory.open(uri: "test:key", deadline: .after(.seconds(60)))
        await key.advanceClock(by: Self.window + .seconds(1))
        let interaction = RecordingInteraction()
        async let reset = directory.reset(
            authenticator, interaction: interaction, deadline: .after(.seconds(60)))
        try await Self.waitForReinsertInstruction(interaction)
        discovery.remove("key")
        try await Task.sleep(for: .milliseconds(50))
        await key.powerCycle()
        discovery.insert("key", key)
        let result = try await reset
        #expect(result !== authenticator, "a new handle for the re-inserted key")
        #expect(result.uri == "test:key")
        #expect(await result.info.options[.clientPIN] == false, "the PIN is gone: the reset reached the key")
        await result.close()
    }

    @Test func aDifferentKeyInsertedInsteadIsRefusedAndNotReset() async throws {
        let key = try Self.pinKey(aaguid: Self.aaguidA)
        let other = try Self.pinKey(aaguid: Self.aaguidB)
        let discovery = ScriptedDiscovery([("key", key)])
        let directory = AuthenticatorDirectory(discoveries: [discovery])
        let authenticator = try await directory.open(uri: "test:key", deadline: .after(.seconds(60)))
        await key.advanceClock(by: Self.window + .seconds(1))
        let interaction = RecordingInteraction()
        async let reset = directory.reset(
            authenticator, interaction: interaction, deadline: .after(.seconds(60)))
        try await Self.waitForReinsertInstruction(interaction)
        discovery.remove("key")
        await other.powerCycle()
        discovery.insert("key", other)
        var error: AuthenticatorError?
        do {
            let unexpected = try await reset
            Issue.record("a different key was reset: \(unexpected.uri)")
        } catch let caught as AuthenticatorError {
            error = caught
        }
        #expect(error?.code == .differentDevice)
        // The other key still has its PIN: nothing was sent to it but getInfo.
        let check = try await directory.open(uri: "test:key", deadline: .after(.seconds(60)))
        #expect(await check.info.options[.clientPIN] == true)
        #expect(await check.info.aaguid.bytes == Self.aaguidB)
        await check.close()
    }

    @Test func withoutAnyoneToInstructNotAllowedIsReportedWithItsOwnSentence() async throws {
        let key = try Self.pinKey(aaguid: Self.aaguidA)
        let discovery = ScriptedDiscovery([("key", key)])
        let directory = AuthenticatorDirectory(discoveries: [discovery])
        let authenticator = try await directory.open(uri: "test:key", deadline: .after(.seconds(60)))
        await key.advanceClock(by: Self.window + .seconds(1))
        let error = await #expect(throws: AuthenticatorError.self) {
            _ = try await directory.reset(authenticator, interaction: nil, deadline: .after(.seconds(60)))
        }
        #expect(error?.code == .notAllowed)
        #expect(error?.ctap2Error?.status == .notAllowed)
        #expect(error?.message.contains("10 seconds") == true)
    }

    @Test func theKeyNotComingBackEndsAtTheDeadline() async throws {
        let key = try Self.pinKey(aaguid: Self.aaguidA)
        let discovery = ScriptedDiscovery([("key", key)])
        let directory = AuthenticatorDirectory(discoveries: [discovery])
        let authenticator = try await directory.open(uri: "test:key", deadline: .after(.seconds(60)))
        await key.advanceClock(by: Self.window + .seconds(1))
        let error = await #expect(throws: AuthenticatorError.self) {
            _ = try await directory.reset(
                authenticator, interaction: RecordingInteraction(), deadline: .after(.milliseconds(800)))
        }
        #expect(error?.code == .timeout)
    }

    @Test func aTransportMissingFromTransportsForResetIsRefusedBeforeSending() async throws {
        // getInfo transportsForReset (0x1A): ["usb"]; the key is reached over NFC.
        let fake = FakeResetKey(
            transport: .nfc, extra: [0x18, 0x1A, 0x81, 0x63] + Array("usb".utf8), extraCount: 1)
        let authenticator = try await Authenticator.open(fake, deadline: .after(.seconds(60)))
        let error = await #expect(throws: AuthenticatorError.self) {
            try await authenticator.reset(interaction: nil, deadline: .after(.seconds(60)))
        }
        #expect(error?.code == .notSupported)
        #expect(fake.commands.withLock { $0 } == [0x04], "no reset was sent")
    }

    @Test func longTouchForResetTellsTheUserToHoldTheTouch() async throws {
        // getInfo longTouchForReset (0x18): true.
        let fake = FakeResetKey(transport: .usb, extra: [0x18, 0x18, 0xF5], extraCount: 1)
        let authenticator = try await Authenticator.open(fake, deadline: .after(.seconds(60)))
        let interaction = RecordingInteraction()
        try await authenticator.reset(interaction: interaction, deadline: .after(.seconds(60)))
        #expect(interaction.instructionKinds == [.holdTouchToReset])
        #expect(fake.commands.withLock { $0 } == [0x04, 0x07, 0x04])
    }

    @Test(arguments: [(UInt8(0x27), AuthenticatorError.Code.operationDenied), (0x2F, .userActionTimeout)])
    func refusalsOnTheKeyKeepTheirCodes(status: UInt8, code: AuthenticatorError.Code) async throws {
        let fake = FakeResetKey(transport: .usb, extra: [], extraCount: 0, resetStatus: status)
        let authenticator = try await Authenticator.open(fake, deadline: .after(.seconds(60)))
        let error = await #expect(throws: AuthenticatorError.self) {
            try await authenticator.reset(interaction: nil, deadline: .after(.seconds(60)))
        }
        #expect(error?.code == code)
        #expect(error?.message.contains("nothing was erased") == true)
    }
}
