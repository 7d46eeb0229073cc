import Foundation
import TestProcesses
import Testing

/// securitykeyd and a CLI process on one key at once (issue 20's contention, with the daemon):
/// serialized by the key (CTAPHID over UDP serves one channel at a time and answers another
/// ERR_CHANNEL_BUSY), no exchange corrupted, and the CLI that waits is told why.
extension DaemonTests {
    @Test func theDaemonAndADirectCLIProcessShareOneKeyInTurn() throws {
        // Each touch takes 1.5 s, so the direct request arrives while the daemon's waits for one.
        let bed = try DaemonBed(keys: 1, pin: nil, keyArguments: ["--presence", "delay:1500"])
        defer { bed.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("daemon-contention-\(UUID())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        let viaDaemon = try TestProcess.start(
            URL(fileURLWithPath: Self.cliBinary),
            ["register", "--rp", "daemon.example", "--user", "u", "--json", "--via-daemon", "--bus-address", bed.address],
            name: "daemon", work: work)
        // The daemon's request is on the key once it has asked for a touch.
        let touched = Date(timeIntervalSinceNow: 15)
        while Date() < touched, !viaDaemon.stderr.contains("Touch") { Thread.sleep(forTimeInterval: 0.05) }
        #expect(viaDaemon.stderr.contains("Touch"), "\(viaDaemon.stderr)")
        let direct = try TestProcess.run(
            Self.cliBinary,
            [
                "register", "--device", "udp:127.0.0.1:\(bed.ports[0])?local=0", "--rp", "direct.example", "--user",
                "u", "--json", "--timeout", "20",
            ], timeout: .seconds(60))
        viaDaemon.process.waitUntilExit()

        #expect(viaDaemon.process.terminationStatus == 0, "\(viaDaemon.stderr)")
        #expect(direct.status == 0, "\(direct.stderrText)")
        // Each got its own credential for its own RP: nothing crossed between the exchanges.
        #expect(jsonObject(viaDaemon.stdout)?["rpId"] as? String == "daemon.example", "\(viaDaemon.stdout)")
        #expect(jsonObject(direct.stdoutText)?["rpId"] as? String == "direct.example", "\(direct.stdoutText)")
        #expect(direct.stderrText.contains("busy with another application"), "\(direct.stderrText)")
    }
}
