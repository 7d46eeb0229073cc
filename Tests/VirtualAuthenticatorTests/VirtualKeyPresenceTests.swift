import CBOR
import Synchronization
import Testing
import Transport
@testable import VirtualAuthenticator

/// Collects keepalive statuses from any thread.
final class KeepaliveRecorder: Sendable {
    private let statuses = Mutex<[KeepaliveStatus]>([])
    var all: [KeepaliveStatus] { statuses.withLock { $0 } }
    var callback: @Sendable (KeepaliveStatus) -> Void {
        { status in self.statuses.withLock { $0.append(status) } }
    }
}

@Suite("VirtualKey user presence, cancellation and reset")
struct VirtualKeyPresenceTests {
    @Test func delayedPresenceSendsKeepalives() async throws {
        let key = try makeKey(
            .init(keepaliveInterval: .milliseconds(20)), userPresence: .approveAfter(.milliseconds(150)))
        let recorder = KeepaliveRecorder()
        let reply = try await send(
            key, Spec.makeCredential, makeCredentialRequest(), keepalive: recorder.callback)
        #expect(reply.status == Spec.ok)
        let statuses = recorder.all
        #expect(!statuses.isEmpty)
        #expect(statuses.allSatisfy { $0 == .userPresenceNeeded })
    }

    @Test func immediatePresenceSendsNoKeepalive() async throws {
        let key = try makeKey()
        let recorder = KeepaliveRecorder()
        #expect(try await send(key, Spec.selection, keepalive: recorder.callback).status == Spec.ok)
        #expect(recorder.all.isEmpty)
    }

    @Test func deniedPresence() async throws {
        let key = try makeKey(userPresence: .deny)
        #expect(
            try await send(key, Spec.makeCredential, makeCredentialRequest()).status == Spec.operationDenied)
    }

    @Test func neverAnsweredTimesOut() async throws {
        let key = try makeKey(
            .init(userPresenceTimeout: .milliseconds(100), keepaliveInterval: .milliseconds(20)),
            userPresence: .never)
        #expect(
            try await send(key, Spec.makeCredential, makeCredentialRequest()).status == Spec.userActionTimeout
        )
    }

    @Test func cancellationAnswersKeepaliveCancel() async throws {
        let key = try makeKey(.init(keepaliveInterval: .milliseconds(10)), userPresence: .never)
        let recorder = KeepaliveRecorder()
        let message = [Spec.makeCredential] + CBOREncoder.encode(.map(makeCredentialRequest()))
        let task = Task { await key.handleCBOR(message, keepalive: recorder.callback) }
        // Cancel once the key is known to be waiting for a touch.
        while recorder.all.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        #expect(await task.value == [Spec.keepaliveCancel])
    }

    @Test func busyWhileWaiting() async throws {
        let key = try makeKey(.init(keepaliveInterval: .milliseconds(10)), userPresence: .never)
        let recorder = KeepaliveRecorder()
        let task = Task { await key.handleCBOR([Spec.selection], keepalive: recorder.callback) }
        while recorder.all.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        // CTAP1_ERR_CHANNEL_BUSY while another request waits.
        #expect(await key.handleCBOR([Spec.getInfo], keepalive: { _ in }) == [0x06])
        // Changing the policy releases the waiting request.
        await key.setUserPresence(.approve)
        #expect(await task.value == [Spec.ok])
    }

    @Test func resetWindowAndPowerCycle() async throws {
        let key = try makeKey()
        let (id, _) = try await register(key)
        _ = try await register(key, userID: [9], rk: true)
        await key.advanceClock(by: .seconds(11))
        #expect(try await send(key, Spec.reset).status == Spec.notAllowed)
        await key.powerCycle()
        await key.setUserPresence(.deny)
        #expect(try await send(key, Spec.reset).status == Spec.operationDenied)
        await key.setUserPresence(.approve)
        #expect(try await send(key, Spec.reset).status == Spec.ok)
        // Both kinds of credential are gone.
        #expect(
            try await send(key, Spec.getAssertion, getAssertionRequest(allowList: [id])).status
                == Spec.noCredentials)
        #expect(try await send(key, Spec.getAssertion, getAssertionRequest()).status == Spec.noCredentials)
        #expect(await key.discoverableCredentialCount == 0)
    }

    @Test func resetAllowedJustAfterStart() async throws {
        let key = try makeKey()
        await key.advanceClock(by: .seconds(9))
        #expect(try await send(key, Spec.reset).status == Spec.ok)
        let short = try makeKey(.init(resetWindow: .zero))
        #expect(try await send(short, Spec.reset).status == Spec.notAllowed)
    }

    @Test func inProcessConnectionRoundTrip() async throws {
        let key = try makeKey()
        let connection = InProcessConnection(handler: key)
        #expect(connection.descriptor.transport == .inProcess)
        let reply = try await connection.transact(.cbor, payload: [Spec.getInfo])
        #expect(reply.first == Spec.ok)
        let version = try await connection.transact(.u2f, payload: [0x00, 0x03, 0x00, 0x00])
        #expect(version == Array("U2F_V2".utf8) + [0x90, 0x00])
        try await connection.wink()
        #expect(await key.winkCount == 1)
        await connection.close()
        await #expect(throws: TransportError.self) {
            try await connection.transact(.cbor, payload: [Spec.getInfo])
        }
    }

    @Test func inProcessConnectionDeadlineAndCancel() async throws {
        let key = try makeKey(.init(keepaliveInterval: .milliseconds(10)), userPresence: .never)
        let connection = InProcessConnection(handler: key)
        let recorder = KeepaliveRecorder()
        do {
            _ = try await connection.transact(
                .cbor, payload: [Spec.selection], deadline: .after(.milliseconds(100)),
                keepalive: recorder.callback)
            Issue.record("The transaction should have timed out.")
        } catch {
            #expect(error.code == .timeout)
        }
        #expect(recorder.all.contains(.userPresenceNeeded))
        let task = Task {
            try await connection.transact(.cbor, payload: [Spec.selection], deadline: .after(.seconds(30))) {
                _ in
            }
        }
        try await Task.sleep(for: .milliseconds(30))
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("The transaction should have been cancelled.")
        } catch let error as TransportError {
            #expect(error.code == .cancelled)
        }
        // The key is free again.
        await key.setUserPresence(.approve)
        #expect(try await connection.transact(.cbor, payload: [Spec.selection]) == [Spec.ok])
    }
}
