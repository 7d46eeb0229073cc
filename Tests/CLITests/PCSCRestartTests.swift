import Foundation
import Testing

/// A long-lived CLI process (`fleet --watch`) while pcscd crashes and comes back: the card is
/// reported gone with pcscd and back with it, without restarting the watcher.
@Suite(.serialized) struct PCSCRestartTests {
    @Test func fleetWatchFollowsARestartedPCSCD() throws {
        let work = try ChoiceCommandTests.scratch("fleet-pcscd-restart")
        defer { try? FileManager.default.removeItem(at: work) }
        try PCSCBed.with { bed in
            try bed.serve()
            let watcher = try FleetWatcher([], environment: bed.environment, in: work)
            let arrived = watcher.events(within: 15) { $0.contains { $0["event"] as? String == "arrived" } }
            try #require(arrived.first?["uri"] as? String == bed.device, "\(arrived)")
            try bed.restartPCSCD()
            let all = watcher.events(within: 20) {
                $0.filter { $0["event"] as? String == "arrived" }.count == 2
            }
            #expect(all.map { $0["event"] as? String } == ["arrived", "left", "arrived"], "\(all)")
            #expect(all.last?["uri"] as? String == bed.device)
            #expect(all.last?["healthy"] as? Bool == true, "\(all)")
            #expect(watcher.process.isRunning)
            // A ceremony on the card of the new pcscd works too.
            let registered = try bed.run([
                "register", "--device", bed.device, "--rp", "example.org", "--user", "u", "--json",
            ])
            #expect(registered.status == 0, "\(registered.stderr)")
        }
    }
}
