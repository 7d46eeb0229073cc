import NFCTransport
import Testing
import Transport

/// `PCSCDiscovery.events()` against pcscd + vpcd: a virtual card connecting to the bed's second
/// reader arrives, disconnecting it removes it; a card already there arrives first.
extension VPCDEndToEndTests {
    @Test func discoveryEventsFollowACard() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        let reader = bed.readers[1]
        let uri = "pcsc:\(reader)"
        let expected = DeviceDescriptor(uri: uri, transport: .nfc, product: reader)
        #expect(try await PCSCDiscovery().devices().contains(expected))
        let events = Recorder<(ContinuousClock.Instant, DeviceEvent)>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in PCSCDiscovery().events() { events.append((.now, event)) }
            }
            // Let the watch take its first look (no card yet: nothing to report).
            try await Task.sleep(for: .milliseconds(300))
            #expect(events.all.isEmpty, "\(events.all.map(\.1))")
            let start = ContinuousClock.now
            try await withCard(EchoHandler(), bed: bed, slot: 1) { _ in
                let arrival = try await waitFor(.arrived(expected), in: events, within: .seconds(5))
                let elapsed = arrival - start
                #expect(elapsed < .seconds(3), "the card arrived \(elapsed) after it connected")
            }
            _ = try await waitFor(.removed(uri: uri), in: events, within: .seconds(5))
            #expect(events.all.map(\.1) == [.arrived(expected), .removed(uri: uri)])
            group.cancelAll()
        }

        // A card already present when iteration starts is the first event.
        try await withCard(EchoHandler(), bed: bed, slot: 1) { _ in
            try await openWhenPresent(reader).close()
            var iterator = PCSCDiscovery().events().makeAsyncIterator()
            #expect(await iterator.next() == .arrived(expected))
        }
    }
}

/// Waits up to `limit` for `event`, returning when it was seen.
private func waitFor(
    _ event: DeviceEvent, in events: Recorder<(ContinuousClock.Instant, DeviceEvent)>, within limit: Duration
) async throws -> ContinuousClock.Instant {
    let deadline = ContinuousClock.now + limit
    while true {
        if let seen = events.all.first(where: { $0.1 == event }) { return seen.0 }
        guard ContinuousClock.now < deadline else {
            Issue.record("no \(event) within \(limit): \(events.all.map(\.1))")
            return .now
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
