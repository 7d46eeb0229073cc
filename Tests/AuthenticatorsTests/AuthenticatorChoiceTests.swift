import Authenticators
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// Choosing a key the way a browser does, driven by hotplug events (ScriptedDiscovery) over
/// in-process virtual keys.
struct AuthenticatorChoiceTests {
    func directory(_ discovery: ScriptedDiscovery) -> AuthenticatorDirectory {
        AuthenticatorDirectory(discoveries: [discovery])
    }

    @Test func theOnlyKeyPresentIsUsedWithoutATouch() async throws {
        // A key that is never touched: choosing it must not wait for a touch.
        let discovery = ScriptedDiscovery([("only", try VirtualKey(userPresence: .never))])
        let chosen = try await directory(discovery).chooseAuthenticator(deadline: .after(.seconds(60)))
        #expect(chosen.uri == "test:only")
        #expect(discovery.subscriptions.withLock { $0 } == 0, "one key present: no need to watch for others")
        await chosen.close()
    }

    @Test func aKeyArrivingWhileTheChoiceWaitsIsUsedAtOnce() async throws {
        let discovery = ScriptedDiscovery()
        let interaction = RecordingInteraction()
        let clock = ContinuousClock()
        let inserted = Mutex<ContinuousClock.Instant?>(nil)
        async let chosen = directory(discovery).chooseAuthenticator(
            deadline: .after(.seconds(60)), interaction: interaction)
        // Plug the key in once the choice is waiting on events.
        while discovery.subscriptions.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(300))
        inserted.withLock { $0 = clock.now }
        discovery.insert("late", try VirtualKey(userPresence: .never))
        let key = try await chosen
        let waited = clock.now - (inserted.withLock { $0 } ?? clock.now)
        #expect(key.uri == "test:late")
        #expect(waited < .seconds(1), "used \(waited) after it arrived")
        #expect(interaction.activities.withLock { $0.first } == .waitingForDevice)
        await key.close()
    }

    @Test func theFirstKeyTouchedWinsAndTheOthersAreCancelled() async throws {
        let idle = CountingKey(try VirtualKey(userPresence: .never))
        let discovery = ScriptedDiscovery([
            ("idle", idle), ("touched", try VirtualKey(userPresence: .approveAfter(.seconds(1)))),
        ])
        let interaction = RecordingInteraction()
        let key = try await directory(discovery).chooseAuthenticator(
            deadline: .after(.seconds(60)), interaction: interaction)
        #expect(key.uri == "test:touched")
        #expect(idle.cancelled.withLock { $0 } == 1, "the idle key's touch wait was cancelled on the key")
        #expect(interaction.activities.withLock { $0 }.contains(.selectingByTouch(count: 2)))
        await key.close()
    }

    @Test func aKeyRemovedMidChoiceLeavesWithATypedErrorWhileTheOthersCarryOn() async throws {
        let discovery = ScriptedDiscovery([
            ("pulled", try VirtualKey(userPresence: .never)),
            ("touched", try VirtualKey(userPresence: .approveAfter(.milliseconds(800)))),
        ])
        let interaction = RecordingInteraction()
        async let chosen = directory(discovery).chooseAuthenticator(
            deadline: .after(.seconds(60)), interaction: interaction)
        while discovery.subscriptions.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        discovery.remove("pulled")
        let key = try await chosen
        #expect(key.uri == "test:touched")
        let departures = interaction.departures
        #expect(departures.count == 1)
        #expect(departures.first?.0 == "test:pulled")
        #expect(departures.first?.1 == .removed)
        await key.close()
    }

    @Test func aKeyJoiningAPendingChoiceCanBeTheOneTouched() async throws {
        let discovery = ScriptedDiscovery([
            ("a", try VirtualKey(userPresence: .never)), ("b", try VirtualKey(userPresence: .never)),
        ])
        let interaction = RecordingInteraction()
        async let chosen = directory(discovery).chooseAuthenticator(
            deadline: .after(.seconds(60)), interaction: interaction)
        while discovery.subscriptions.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        discovery.insert("c", try VirtualKey(userPresence: .approveAfter(.milliseconds(200))))
        let key = try await chosen
        #expect(key.uri == "test:c")
        #expect(interaction.activities.withLock { $0 }.contains(.selectingByTouch(count: 3)))
        await key.close()
    }

    @Test func noKeyBeforeTheDeadlineIsATypedError() async throws {
        let error = await #expect(throws: AuthenticatorError.self) {
            _ = try await directory(ScriptedDiscovery()).chooseAuthenticator(deadline: .after(.milliseconds(300)))
        }
        #expect(error?.code == .noDevice)
    }

    @Test func everyKeyDecliningEndsTheChoiceWithTheKeysError() async throws {
        let discovery = ScriptedDiscovery([
            ("a", try VirtualKey(userPresence: .deny)), ("b", try VirtualKey(userPresence: .deny)),
        ])
        let error = await #expect(throws: AuthenticatorError.self) {
            _ = try await directory(discovery).chooseAuthenticator(deadline: .after(.seconds(10)))
        }
        // CTAP2_ERR_OPERATION_DENIED (0x27), as the virtual key answers a refused touch.
        #expect(error?.ctap2Error?.status?.rawValue == 0x27)
    }

    @Test func cancellingTheCallerEndsTheChoice() async throws {
        let discovery = ScriptedDiscovery([
            ("a", try VirtualKey(userPresence: .never)), ("b", try VirtualKey(userPresence: .never)),
        ])
        let task = Task { try await directory(discovery).chooseAuthenticator(deadline: .after(.seconds(30))) }
        while discovery.subscriptions.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        task.cancel()
        let result = await task.result
        #expect((try? result.get()) == nil)
        if case .failure(let error as AuthenticatorError) = result { #expect(error.code == .cancelled) }
    }
}

/// The key a command that never guesses uses (`openOnly`), and the keys present (`openPresent`)
/// the CLI, the OpenSSH provider and the PAM module start from.
struct OnlyKeyTests {
    @Test func theOnlyKeyPresentIsOpenedWithoutATouch() async throws {
        let key = MessageCountingKey(try VirtualKey(userPresence: .never))
        let directory = AuthenticatorDirectory(discoveries: [ScriptedDiscovery([("only", key)])])
        guard case .one(let only) = try await directory.openOnly(deadline: .after(.seconds(30))) else {
            Issue.record("one key present, not one found")
            return
        }
        #expect(only.uri == "test:only")
        #expect(key.commands.withLock { $0 } == [0x04], "getInfo only: nothing asks for a touch")
        await only.close()
    }

    @Test func severalKeysAreNamedAndNoneIsUsed() async throws {
        let a = MessageCountingKey(try VirtualKey(userPresence: .never))
        let b = MessageCountingKey(try VirtualKey(userPresence: .never))
        let directory = AuthenticatorDirectory(discoveries: [ScriptedDiscovery([("a", a), ("b", b)])])
        guard case .several(let uris) = try await directory.openOnly(deadline: .after(.seconds(30))) else {
            Issue.record("two keys present, one chosen")
            return
        }
        #expect(uris == ["test:a", "test:b"])
        #expect(a.commands.withLock { $0 } == [0x04])
        #expect(b.commands.withLock { $0 } == [0x04])
    }

    @Test func theKeyNamedIsListedAlone() async throws {
        let directory = AuthenticatorDirectory(discoveries: [
            ScriptedDiscovery([("a", try VirtualKey()), ("b", try VirtualKey(configuration: .ctap22()))])
        ])
        let listing = try await directory.list(uri: "test:b", deadline: .after(.seconds(5)))
        #expect(listing.descriptor.uri == "test:b")
        #expect(listing.info?.versions.contains(.fido2_2) == true, "b is the CTAP 2.2 key")
        await #expect(throws: AuthenticatorError(.noDevice, "")) {
            try await directory.list(uri: "test:gone", deadline: .after(.seconds(5)))
        }
    }

    @Test func noKeyPresentIsNoDevice() async throws {
        let directory = AuthenticatorDirectory(discoveries: [ScriptedDiscovery()])
        await #expect(throws: AuthenticatorError(.noDevice, "")) {
            try await directory.openPresent(deadline: .after(.seconds(5)))
        }
        await #expect(throws: AuthenticatorError(.noDevice, "")) {
            try await directory.openOnly(deadline: .after(.seconds(5)))
        }
    }

    @Test(arguments: [
        ("udp:127.0.0.1:8111", ["udp:127.0.0.1:8111"]), ("udp:127.0.0.1:9000", ["udp:127.0.0.1:8111", "udp:127.0.0.1:9000"]),
        ("hid:/dev/hidraw0", ["udp:127.0.0.1:8111"]),
    ])
    func aUDPKeyNamedByDeviceIsListedOnce(device: String, expected: [String]) throws {
        let endpoints = try AuthenticatorDirectory.udpEndpoints(
            options: ["127.0.0.1:8111"], environment: [:], device: device)
        #expect(endpoints.map(\.uri) == expected)
    }
}

/// Forwards to a key and records the CTAP command byte of each CBOR request it gets.
final class MessageCountingKey: CTAPMessageHandler {
    let inner: any CTAPMessageHandler
    let commands = Mutex<[UInt8]>([])
    init(_ inner: any CTAPMessageHandler) { self.inner = inner }
    func handleCBOR(_ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async -> [UInt8] {
        commands.withLock { $0.append(message.first ?? 0) }
        return await inner.handleCBOR(message, keepalive: keepalive)
    }
    func handleU2F(_ apdu: [UInt8]) async -> [UInt8] { await inner.handleU2F(apdu) }
    func powerCycle() async { await inner.powerCycle() }
    func wink() async { await inner.wink() }
}

/// Forwards to a key and counts the requests the host cancelled (CTAP2_ERR_KEEPALIVE_CANCEL).
final class CountingKey: CTAPMessageHandler {
    let inner: any CTAPMessageHandler
    let cancelled = Mutex(0)
    init(_ inner: any CTAPMessageHandler) { self.inner = inner }
    func handleCBOR(_ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async -> [UInt8] {
        let reply = await inner.handleCBOR(message, keepalive: keepalive)
        if reply == [0x2D] { cancelled.withLock { $0 += 1 } }
        return reply
    }
    func handleU2F(_ apdu: [UInt8]) async -> [UInt8] { await inner.handleU2F(apdu) }
    func powerCycle() async { await inner.powerCycle() }
    func wink() async { await inner.wink() }
}
