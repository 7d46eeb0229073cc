import Foundation
import TestProcesses
import Testing

/// securitykeyd when something dies halfway (issue 32): the daemon itself (SIGKILL, restarted),
/// pcscd (killed and restarted during a ceremony and between two), a vpcd card pulled during an
/// exchange. Each request that was in flight ends with a typed D-Bus error; the next works
/// without restarting anything but what died.
extension DaemonTests {
    /// Kill the daemon while its request waits for a touch on the key: the caller gets the bus's
    /// NoReply; a new daemon on the same bus lists the key idle, the key's PIN retries are all
    /// there, and the next ceremony (python-fido2 verifying) works.
    @Test func aDaemonKilledMidCeremonyComesBackClean() throws {
        guard let python = pythonInterpreter() else { return }
        let bed = try DaemonBed(keys: 1, pin: Self.pin, keyArguments: ["--presence", "delay:2500"])
        defer { bed.stop() }
        let device = "udp:127.0.0.1:\(bed.ports[0])?local=0"
        let retriesBefore = try pinRetries(device)
        let follow = try bed.follow(python, ["register", Self.pin], name: "killed")
        _ = try follow.waitForLine { $0["state"] as? String == "NEEDS_USER_PRESENCE" }
        let old = bed.daemon.processIdentifier
        try bed.restartDaemon(killing: true)
        let outcome = try follow.waitForLine { $0["outcome"] != nil }
        #expect(outcome["outcome"] as? String == "org.freedesktop.DBus.Error.NoReply", "\(outcome)")
        #expect(bed.daemon.processIdentifier != old)

        try bed.waitUntilListed(1)
        let listed = try bed.call("ListDevices")
        #expect(listed.stdout.contains("\"busy\" b false"), "\(listed.stdout)")
        // The key's own view: no PIN attempt was spent by the crash.
        #expect(try pinRetries(device) == retriesBefore)
        // The key finishes the touch the dead daemon asked for, then serves the new daemon.
        let next = try bed.client(python, ["ceremonies", "1", Self.pin])
        #expect(next.status == 0, "\(next.stdout) \(next.stderr)")
        #expect(try pinRetries(device) == retriesBefore)
    }

    /// The key's PIN retries as `securitykey pin status` reads them.
    func pinRetries(_ device: String) throws -> Int? {
        let status = try DaemonBed.run(Self.cliBinary, ["pin", "status", "--device", device, "--json"])
        return jsonObject(status.stdout)?["pinRetries"] as? Int
    }

    /// pcscd killed while the daemon's request waits for a touch on a vpcd card: the request
    /// fails with a typed error and the card leaves ListDevices; pcscd restarted, the same daemon
    /// process sees the card again and serves the next ceremony; pcscd restarted between two ceremonies, the next works too.
    @Test(.enabled(if: getuid() == 0, "the private PC/SC bed needs root"))
    func pcscdKilledAndRestartedDuringAndBetweenCeremonies() throws {
        guard let python = pythonInterpreter() else { return }
        let cards = try VirtualKeyBed(prefix: "daemon-pcscd")
        defer { withExtendedLifetime(cards) {} }  // its pcscd and card live until the end
        let card = try cards.servePCSC(extra: ["--presence", "delay:2500"])
        let bed = try DaemonBed(keys: 0, pin: nil, pcsc: true, environment: cards.environment)
        defer { bed.stop() }
        let daemon = bed.daemon.processIdentifier

        let during = try bed.follow(python, ["register"], name: "during")
        _ = try during.waitForLine {
            $0["state"] as? String == "NEEDS_USER_PRESENCE" && $0["device"] as? String == card
        }
        try cards.pcscd(.kill)
        let killed = Date()
        let outcome = try during.waitForLine { $0["outcome"] != nil }
        let name = try #require(outcome["outcome"] as? String)
        #expect(name.hasPrefix("org.securitykey.Daemon1.Error."), "\(outcome)")
        #expect(
            Date().timeIntervalSince(killed) < 10,
            "the error came \(Date().timeIntervalSince(killed)) s after pcscd died")

        // The card went with pcscd (a daemon that kept listing it would offer a key it cannot
        // reach, and miss cards put on readers once pcscd is back).
        try bed.waitUntilListed(0)
        try cards.pcscd(.restart)
        try bed.waitUntilListed(1)
        let after = try bed.client(python, ["ceremonies", "1", "-"])
        #expect(after.status == 0, "\(after.stdout) \(after.stderr)")

        // Between two ceremonies, the next one started at once (the daemon may still list the
        // card of the pcscd that died; it waits for the card to come back).
        try cards.pcscd(.restart)
        let between = try bed.client(python, ["ceremonies", "1", "-"])
        #expect(between.status == 0, "\(between.stdout) \(between.stderr)")
        #expect(bed.daemon.processIdentifier == daemon && bed.daemon.isRunning)
    }

    /// A vpcd card killed (SIGKILL, its vpcd socket closed) while the daemon's sign-in waits for
    /// its touch: the request fails with a typed error well before its deadline, the card leaves
    /// ListDevices, and the daemon goes on serving its UDP key.
    @Test(.enabled(if: getuid() == 0, "the private PC/SC bed needs root"))
    func aCardRemovedMidExchangeFailsItsRequestAndTheOtherKeysServeOn() throws {
        guard let python = pythonInterpreter() else { return }
        let cards = try VirtualKeyBed(prefix: "daemon-card")
        defer { withExtendedLifetime(cards) {} }
        let card = try cards.servePCSC(extra: ["--presence", "delay:2500"])
        // A credential on the card alone, made directly (not through the daemon).
        let made = try cards.securitykey([
            "register", "--device", card, "--rp", "example.org", "--user", "u", "--json",
        ])
        try #require(made.status == 0, "\(made.stderrText)")
        let credential = try #require(
            jsonObject(made.stdoutText)?["credentialId"] as? String ?? jsonObject(made.stdoutText)?["id"]
                as? String,
            "\(made.stdoutText)")
        let bed = try DaemonBed(keys: 1, pin: nil, pcsc: true, environment: cards.environment)
        defer { bed.stop() }

        let signIn = try bed.follow(python, [credential], name: "signin")
        _ = try signIn.waitForLine {
            $0["state"] as? String == "NEEDS_USER_PRESENCE" && $0["device"] as? String == card
        }
        let served = try #require(cards.background.first { $0.out.lastPathComponent == "pcsc-key.out" })
        kill(served.process.processIdentifier, SIGKILL)
        let pulled = Date()
        let outcome = try signIn.waitForLine { $0["outcome"] != nil }
        #expect(
            outcome["outcome"] as? String == "org.securitykey.Daemon1.Error.NotAllowedError", "\(outcome)")
        // The options' timeout is 30 s: the error comes on that deadline at the latest.
        #expect(Date().timeIntervalSince(pulled) < 30)

        try bed.waitUntilListed(1)
        let listed = try bed.call("ListDevices")
        #expect(!listed.stdout.contains("pcsc:"), "\(listed.stdout)")
        let next = try bed.client(python, ["ceremonies", "1", "-"])
        #expect(next.status == 0, "\(next.stdout) \(next.stderr)")
    }
}

extension DaemonBed {
    /// Starts the python client's `follow` scenario in the background (its lines in a file).
    func follow(_ python: String, _ arguments: [String], name: String) throws -> FollowedRequest {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Python/daemon_client.py").path
        let process = try TestProcess.start(
            URL(fileURLWithPath: python), [script, address, "follow"] + arguments, name: name, work: directory
        )
        return FollowedRequest(background: process)
    }
}

/// A request followed by the python client: its StateChanged lines and outcome as they come.
struct FollowedRequest {
    let background: BackgroundProcess

    /// The first line (a JSON object) that `matches`, waiting up to `seconds` for it.
    func waitForLine(within seconds: Double = 60, _ matches: ([String: Any]) -> Bool) throws -> [String: Any]
    {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while true {
            // Whether it had ended before this read: then the read saw all it wrote.
            let ended = !background.process.isRunning
            for line in background.stdout.split(separator: "\n") {
                if let object = jsonObject(String(line)), matches(object) { return object }
            }
            guard !ended, Date() < deadline else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw DaemonBed.BedError(
            description: "no such line from the client: \(background.stdout) \(background.stderr)")
    }
}
