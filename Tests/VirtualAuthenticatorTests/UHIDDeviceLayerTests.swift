import Authenticators
import Foundation
import HIDTransport
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// The device layer over real hidraw in the QEMU guest: a key plugged in (a uhid device created)
/// while a choice waits for one is used at once, from the udev/kernel event, not a poll.
extension UHIDServerTests {
    @Test func aKeyPluggedInWhileAChoiceWaitsIsUsedWithinASecond() async throws {
        let directory = AuthenticatorDirectory(discoveries: [HIDDiscovery(openTimeout: .seconds(20))])
        let waiting = WaitingSignal()
        let key = try VirtualKey()
        let server = UHIDServer(handler: key, configuration: .init(serialNumber: "UHIDCHOICE1"))
        let clock = ContinuousClock()
        try await withThrowingTaskGroup(of: Void.self) { group in
            let chosen = Task { try await directory.chooseAuthenticator(deadline: .after(.seconds(60)), interaction: waiting) }
            defer { chosen.cancel() }
            try await waiting.untilWaiting()
            // Let the watch settle into its wait before the key appears.
            try await Task.sleep(for: .milliseconds(300))
            let created = clock.now
            group.addTask { try await server.run() }
            let authenticator = try await chosen.value
            let used = clock.now - created
            #expect(authenticator.descriptor.serialNumber == "UHIDCHOICE1")
            #expect(await authenticator.info.aaguid.bytes == key.aaguid)
            #expect(used < .seconds(1), "the key was used \(used) after it was plugged in")
            await authenticator.close()
            group.cancelAll()
        }
    }
}

/// Reports when a choice starts waiting for a key to arrive.
final class WaitingSignal: AuthenticatorInteraction {
    private let state = Mutex<(waiting: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    let canPrompt = false

    func pin(_ prompt: PINPrompt) async -> String? { nil }

    func activity(_ activity: AuthenticatorActivity) {
        guard activity == .waitingForDevice else { return }
        let waiters = state.withLock { state in
            state.waiting = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func untilWaiting() async throws {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                if !state.waiting { state.waiters.append(continuation) }
                return state.waiting
            }
            if ready { continuation.resume() }
        }
    }
}
