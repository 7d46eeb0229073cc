import Foundation
import Testing

/// Two CLI processes on one PC/SC card at once: each CTAP exchange runs inside a PC/SC
/// transaction (`SCardBeginTransaction`), so the second process waits in pcscd instead of
/// slipping its APDUs between the first one's, is told why, and gives up at its deadline.
@Suite(.serialized) struct PCSCContentionTests {
    /// Starts `securitykey ARGUMENTS` in the bed with its output in files under `work`.
    private static func start(_ arguments: [String], name: String, bed: PCSCBed, work: URL) throws
        -> CLIRunner.Background
    {
        try CLIRunner.start(arguments, name: name, work: work, environment: bed.environment)
    }

    /// Both registrations succeed, each with its own RP (nothing crossed between the
    /// exchanges), and only the one that waited says the key was busy.
    @Test func twoProcessesOnOneCardAreSerializedAndTheSecondIsToldWhy() throws {
        let work = try ChoiceCommandTests.scratch("pcsc-contention")
        defer { try? FileManager.default.removeItem(at: work) }
        try PCSCBed.with { bed in
            // Each touch takes 1.5 s: the first holds the card (polling 9100) while the second asks.
            try bed.serve(["--presence", "delay:1500"])
            func register(_ rp: String) throws -> CLIRunner.Background {
                try Self.start(
                    ["register", "--device", bed.device, "--rp", rp, "--user", "u", "--json", "--timeout", "15"],
                    name: rp, bed: bed, work: work)
            }
            let first = try register("first.example")
            Thread.sleep(forTimeInterval: 0.6)
            let second = try register("second.example")
            first.process.waitUntilExit()
            second.process.waitUntilExit()
            #expect(first.process.terminationStatus == 0, "\(first.stderr)")
            #expect(second.process.terminationStatus == 0, "\(second.stderr)")
            for (rp, run) in [("first.example", first), ("second.example", second)] {
                let object = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
                #expect(object?["rpId"] as? String == rp, "\(run.stdout) \(run.stderr)")
            }
            #expect(second.stderr.contains("busy with another application"), "\(second.stderr)")
            #expect(!first.stderr.contains("busy with another application"), "\(first.stderr)")
        }
    }

    /// A process that holds the card longer than the other's deadline: the other ends at its
    /// deadline with a `busy` error (pcsc-lite itself would wait for ever), and the first is
    /// not disturbed.
    @Test func theWaitEndsAtTheDeadlineWithATypedError() throws {
        let work = try ChoiceCommandTests.scratch("pcsc-contention-deadline")
        defer { try? FileManager.default.removeItem(at: work) }
        try PCSCBed.with { bed in
            try bed.serve(["--presence", "delay:7000"])
            let first = try Self.start(
                ["register", "--device", bed.device, "--rp", "holder.example", "--user", "u", "--json", "--timeout", "20"],
                name: "holder", bed: bed, work: work)
            Thread.sleep(forTimeInterval: 1.0)
            let started = Date()
            let second = try Self.start(
                ["register", "--device", bed.device, "--rp", "late.example", "--user", "u", "--json", "--timeout", "2"],
                name: "late", bed: bed, work: work)
            second.process.waitUntilExit()
            let waited = Date().timeIntervalSince(started)
            first.process.waitUntilExit()
            #expect(second.process.terminationStatus != 0)
            let error = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any]
            let code = (error?["error"] as? [String: Any])?["code"] as? String ?? error?["code"] as? String
            #expect(code == "busy", "\(second.stdout) \(second.stderr)")
            #expect(second.stderr.contains("busy with another application"), "\(second.stderr)")
            // Its deadline was 2 s; the holder kept the card for about 6 s more.
            #expect(waited < 4.5, "the waiting process took \(waited) s")
            #expect(first.process.terminationStatus == 0, "\(first.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any]
            #expect(object?["rpId"] as? String == "holder.example")
        }
    }

    /// Ctrl-C while waiting for a card another process holds: pcsc-lite's wait cannot be
    /// interrupted, so the CLI stops waiting for it at once (within the 1 s after which the
    /// CLI would exit anyway) with exit status 4, the `cancelled` code and a sentence that says
    /// what it was waiting for; the holder is not disturbed and the card stays usable.
    @Test func ctrlCWhileWaitingForABusyCardEndsTheWaitAtOnce() throws {
        let work = try ChoiceCommandTests.scratch("pcsc-contention-interrupt")
        defer { try? FileManager.default.removeItem(at: work) }
        try PCSCBed.with { bed in
            try bed.serve(["--presence", "delay:5000"])
            let holder = try Self.start(
                ["register", "--device", bed.device, "--rp", "holder.example", "--user", "u", "--json", "--timeout", "20"],
                name: "holder", bed: bed, work: work)
            Thread.sleep(forTimeInterval: 1.0)
            let waiter = try Self.start(
                ["register", "--device", bed.device, "--rp", "waiter.example", "--user", "u", "--json", "--timeout", "20"],
                name: "waiter", bed: bed, work: work)
            defer { if waiter.process.isRunning { waiter.process.terminate() } }
            let told = Date().addingTimeInterval(5)
            while !waiter.stderr.contains("busy with another application"), Date() < told, waiter.process.isRunning {
                Thread.sleep(forTimeInterval: 0.05)
            }
            try #require(waiter.stderr.contains("busy with another application"), "\(waiter.stderr)")
            let interrupted = Date()
            waiter.process.interrupt()  // SIGINT, as Ctrl-C sends
            waiter.process.waitUntilExit()
            let took = Date().timeIntervalSince(interrupted)
            // Without the prompt end of the wait, the CLI's 1 s grace-period exit ends it.
            #expect(took < 0.8, "the waiting process took \(took) s to end after SIGINT")
            #expect(waiter.process.terminationReason == .exit)
            #expect(waiter.process.terminationStatus == 4)
            let error = try JSONSerialization.jsonObject(with: Data(waiter.stdout.utf8)) as? [String: Any]
            #expect((error?["error"] as? [String: Any])?["code"] as? String == "cancelled", "\(waiter.stdout)")
            #expect(
                waiter.stderr.contains("cancelled while waiting for the security key, which another application held"),
                "\(waiter.stderr)")

            holder.process.waitUntilExit()
            #expect(holder.process.terminationStatus == 0, "\(holder.stderr)")
            // The card is free again: the next command gets it at once.
            let next = try bed.run(["info", "--device", bed.device, "--json", "--timeout", "5"])
            #expect(next.status == 0, "\(next.stderr)")
            #expect(!next.stderr.contains("busy with another application"), "\(next.stderr)")
        }
    }
}
