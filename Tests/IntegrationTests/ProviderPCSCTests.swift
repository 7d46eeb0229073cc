import Authenticators
import Foundation
import HIDTransport
import NFCTransport
import SecurityKeys
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// The provider API over pcscd: two virtual cards on vpcd's two readers (scripts/pcsc-testbed.sh).
/// Serialized because the bed has only two readers.
@Suite(.serialized)
struct ProviderPCSCTests {
    static let howToRun =
        "These tests need the PC/SC bed: SECURITYKEY_PYTHON=.venv/bin/python3 scripts/pcsc-testbed.sh run -- "
        + "swift test --skip-build --filter Provider"

    /// vpcd's port for the first reader, or a recorded failure saying how to start the bed.
    func vpcdPort() -> UInt16? {
        let env = ProcessInfo.processInfo.environment
        guard env["PCSCLITE_CSOCK_NAME"] != nil, let text = env["SECURITYKEY_VPCD_PORT"],
            let port = UInt16(text)
        else {
            Issue.record(Comment(rawValue: Self.howToRun))
            return nil
        }
        return port
    }

    /// Runs a card for `handler` in reader `slot` while `body` runs.
    func withCards<T: Sendable>(
        _ handlers: [any CTAPMessageHandler], port: UInt16, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self, returning: T.self) { group in
            for (slot, handler) in handlers.enumerated() {
                let server = VPCDCardServer(
                    handler: handler,
                    configuration: .init(
                        host: "127.0.0.1", port: port + UInt16(slot), reconnectDelay: .milliseconds(50)))
                group.addTask { await server.run() }
            }
            defer { group.cancelAll() }
            return try await body()
        }
    }

    /// Waits until pcscd sees a card in each of `count` readers.
    func waitForCards(_ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            var present = 0
            for device in try await PCSCDiscovery().devices() {
                if let connection = try? await PCSCDiscovery().open(uri: device.uri) {
                    present += 1
                    await connection.close()
                }
            }
            if present >= count { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("pcscd did not see \(count) cards within 10 s")
    }

    @Test func twoCardsAndAUDPKeyOnlyTheTouchedOneWinsAndResultsVerifyInPythonFIDO2() async throws {
        guard let port = vpcdPort() else { return }
        let idle = CancelCountingHandler(inner: try VirtualKey(userPresence: .never))
        let idleUDP = CancelCountingHandler(inner: try VirtualKey(userPresence: .never))
        let touched = try VirtualKey(userPresence: .approveAfter(.milliseconds(500)))
        let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")
        let udpServer = try UDPCTAPHIDServer(handler: idleUDP, configuration: .init(port: 0))
        let endpoint = UDPEndpoint(port: udpServer.port, localPort: UInt16.random(in: 40000...50000))
        let udpTask = Task { try await udpServer.run() }
        defer { udpTask.cancel() }
        try await withCards([idle, touched], port: port) {
            try await waitForCards(2)
            let controller = SecurityKeyAuthorizationController(sources: [.pcsc, .udp([endpoint])])
            let registrationChallenge = randomBytes(32)
            var request = provider.createCredentialRegistrationRequest(
                challenge: registrationChallenge, displayName: "Anne", name: "anne", userID: [1])
            request.attestationPreference = .direct
            request.timeout = .seconds(20)
            let credential = try await controller.performRegistration(request)
            #expect(credential.deviceURI.hasSuffix("01"))
            #expect(idle.cancels.withLock { $0 } >= 1)
            #expect(idleUDP.cancels.withLock { $0 } >= 1)
            let events = await drain(controller.statusUpdates)
            #expect(events.contains(.selectingKey(count: 3)))

            let assertionChallenge = randomBytes(32)
            var assertion = provider.createCredentialAssertionRequest(challenge: assertionChallenge)
            assertion.allowedCredentials = [
                SecurityKeyCredentialDescriptor(credentialID: credential.credentialID)
            ]
            assertion.timeout = .seconds(20)
            let signIn = try await controller.performAssertion(assertion)
            #expect(signIn.deviceURI == credential.deviceURI)
            try await verifyWithPythonFIDO2(
                rpID: "example.org", registrationChallenge: registrationChallenge, registration: credential,
                assertionChallenge: assertionChallenge, assertion: signIn)
        }
    }

    @Test func aCardPutOnAReaderWhileARequestWaitsIsUsedWithinASecond() async throws {
        guard let port = vpcdPort() else { return }
        let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")
        let controller = SecurityKeyAuthorizationController(sources: [.pcsc])
        var request = provider.createCredentialRegistrationRequest(
            challenge: randomBytes(32), displayName: "Late", name: "late", userID: [9])
        request.timeout = .seconds(20)
        let registration = request
        let clock = ContinuousClock()
        let inserted = Moment()
        let key = try VirtualKey()
        let credential = try await withThrowingTaskGroup(
            of: SecurityKeyCredentialRegistration?.self, returning: SecurityKeyCredentialRegistration.self
        ) { group in
            group.addTask {
                // The card goes on the reader only once the request says it waits for a key.
                for await status in controller.statusUpdates where status == .waitingForKey { break }
                try await Task.sleep(for: .milliseconds(300))
                let server = VPCDCardServer(
                    handler: key,
                    configuration: .init(host: "127.0.0.1", port: port, reconnectDelay: .milliseconds(50)))
                inserted.record(clock.now)
                await server.run()
                return nil
            }
            group.addTask { try await controller.performRegistration(registration) }
            while let result = try await group.next() {
                if let credential = result {
                    group.cancelAll()
                    return credential
                }
            }
            throw CancellationError()
        }
        let waited = clock.now - (inserted.value ?? clock.now)
        #expect(credential.deviceURI.hasPrefix("pcsc:"))
        #expect(waited < .seconds(1), "the card was used \(waited) after it was put on the reader")
    }

    @Test func aCardTakenOffItsReaderMidChoiceLeavesWhileTheOtherCarriesOn() async throws {
        guard let port = vpcdPort() else { return }
        let interaction = LeavingRecorder()
        let touched = try VirtualKey(userPresence: .approveAfter(.milliseconds(1500)))
        let pulledServer = VPCDCardServer(
            handler: try VirtualKey(userPresence: .never),
            configuration: .init(host: "127.0.0.1", port: port, reconnectDelay: .milliseconds(50)))
        let touchedServer = VPCDCardServer(
            handler: touched,
            configuration: .init(host: "127.0.0.1", port: port + 1, reconnectDelay: .milliseconds(50)))
        let pulled = Task { await pulledServer.run() }
        let staying = Task { await touchedServer.run() }
        defer {
            pulled.cancel()
            staying.cancel()
        }
        try await waitForCards(2)
        let directory = AuthenticatorDirectory(discoveries: [PCSCDiscovery()])
        let chosen = Task {
            try await directory.chooseAuthenticator(deadline: .after(.seconds(20)), interaction: interaction)
        }
        // Take the never-touched card off its reader while both keys blink.
        try await Task.sleep(for: .milliseconds(400))
        pulled.cancel()
        let key = try await chosen.value
        #expect(key.uri.hasSuffix("01"))
        #expect(await key.info.aaguid.bytes == touched.aaguid)
        let left = interaction.left
        #expect(left.count == 1)
        #expect(left.first?.0.hasSuffix("00") == true)
        #expect(left.first?.1 == .removed)
        await key.close()
    }
}

/// Records the keys that left a choice, and why.
final class LeavingRecorder: AuthenticatorInteraction {
    private let departures = Mutex<[(String, AuthenticatorError.Code)]>([])
    let canPrompt = false
    func pin(_ prompt: PINPrompt) async -> String? { nil }
    func activity(_ activity: AuthenticatorActivity) {
        if case .deviceLeft(let uri, let error) = activity { departures.withLock { $0.append((uri, error.code)) } }
    }
    var left: [(String, AuthenticatorError.Code)] { departures.withLock { $0 } }
}

/// A moment one task records and another reads.
final class Moment: Sendable {
    private let stored = Mutex<ContinuousClock.Instant?>(nil)
    func record(_ instant: ContinuousClock.Instant) { stored.withLock { $0 = instant } }
    var value: ContinuousClock.Instant? { stored.withLock { $0 } }
}
