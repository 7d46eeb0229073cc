import Foundation
import HIDTransport
import Testing
import Transport
import VirtualAuthenticator

/// `HIDDiscovery.events()` against the kernel's hidraw nodes in the QEMU guest (no udevd there,
/// so the watch uses the kernel's uevents): a uhid key arrives, with the descriptor hidapi's
/// listing gives it; a keyboard never does; destroying the key removes it.
extension UHIDServerTests {
    @Test func hotplugEventsFollowTheKey() async throws {
        let events = Recorder<(ContinuousClock.Instant, DeviceEvent)>()
        let keyboard = open("/dev/uhid", O_RDWR | O_CLOEXEC)
        try #require(keyboard >= 0, "cannot open /dev/uhid (errno \(errno))")
        defer { close(keyboard) }
        try await withThrowingTaskGroup(of: Void.self) { watching in
            watching.addTask {
                for await event in HIDDiscovery().events() { events.append((.now, event)) }
            }
            // Let the watch list what is there (nothing of ours) and settle into its wait.
            try await Task.sleep(for: .milliseconds(500))
            let create = Self.keyboardCreateEvent(serial: "KEYBOARD2")
            try #require(create.withUnsafeBytes { write(keyboard, $0.baseAddress, $0.count) } == create.count)

            let server = UHIDServer(
                handler: CTAPHIDTestHandler(tag: [0x44]), configuration: .init(serialNumber: "UHIDTEST4"))
            let start = ContinuousClock.now
            let serving = Task { try await server.run() }
            defer { serving.cancel() }
            let (arrivedAt, arrived) = try await Self.waitForEvent(in: events) {
                if case .arrived(let key) = $0 { return key.serialNumber == "UHIDTEST4" }
                return false
            }
            #expect(
                arrivedAt - start < .seconds(1), "the key arrived \(arrivedAt - start) after it was created")
            guard case .arrived(let key) = arrived else { return }
            #expect(key.uri.hasPrefix("hid:/dev/hidraw"))
            #expect(key.vendorID == 0x1209)
            #expect(key.productID == 0xF1D0)
            // hidapi's listing (an independent reading of the same node) agrees field by field.
            let listed = try await HIDDiscovery().devices()
            #expect(listed.contains(key), "\(listed) lacks \(key)")
            // The key is usable at the URI the event named.
            let connection = try await HIDDiscovery(openTimeout: .seconds(20)).open(uri: key.uri)
            #expect(
                try await connection.transact(.cbor, payload: [7], timeout: .seconds(20)) == [0, 0x44, 7])
            await connection.close()

            serving.cancel()
            _ = await serving.result
            _ = try await Self.waitForEvent(in: events) { $0 == .removed(uri: key.uri) }
            let keyboardNodes = Self.hidrawNodes(serial: "KEYBOARD2").map { "hid:/dev/\($0)" }
            #expect(keyboardNodes.count == 1)
            #expect(events.all.map(\.1) == [.arrived(key), .removed(uri: key.uri)])
            watching.cancelAll()
        }
    }

    /// Waits (up to 20 s: the guest is slow) for an event `matches` accepts.
    static func waitForEvent(
        in events: Recorder<(ContinuousClock.Instant, DeviceEvent)>,
        _ matches: (DeviceEvent) -> Bool
    ) async throws -> (ContinuousClock.Instant, DeviceEvent) {
        for _ in 0..<2000 {
            if let found = events.all.first(where: { matches($0.1) }) { return found }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("no such event within 20 s: \(events.all.map(\.1))")
        throw CancellationError()
    }
}
