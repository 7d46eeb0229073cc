import Foundation
import Testing

/// Key administration (credentials, config, pin verify/status, reset) run as the built binary
/// against a CTAP 2.1 virtual key, over CTAPHID-over-UDP and over PC/SC. One scenario per
/// transport, ordered so that the key's 10-second reset window is waited for at most once.
@Suite(.serialized) struct AdministrationCommandTests {
    /// One served key and what a scenario needs of it: running commands on it and power-cycling it.
    final class Bench {
        let device: String
        /// What the CLI needs to see the key (the PC/SC bed's environment; nothing for UDP).
        let environment: [String: String]
        /// Pulls the key out and puts it back powered up; returns once the CLI sees it again.
        let powerCycle: () throws -> Void
        /// When the key was last powered up (process start, card insertion, SIGUSR1 re-plug).
        var poweredUp = Date()
        /// Whether the host may power the key down and up between commands on its own: pcscd
        /// does so with an idle card, which clears the key's "power cycle required" flag.
        var hostPowersKey = false
        /// How many power-ups the key has logged, where the host powers it as it sees fit.
        var powerUps: (() -> Int)?

        init(
            device: String, environment: [String: String], powerCycle: @escaping () throws -> Void
        ) {
            self.device = device
            self.environment = environment
            self.powerCycle = powerCycle
        }

        /// Runs `securitykey ARGUMENTS --device DEVICE`.
        func run(_ arguments: [String], input: String? = nil) throws -> CLIRunner.Result {
            try CLIRunner.run(arguments + ["--device", device], input: input, environment: environment)
        }

        /// Starts `securitykey ARGUMENTS --device DEVICE` in the background, output to files.
        func start(_ arguments: [String], stdout: URL, stderr: URL) throws -> Process {
            let process = Process()
            process.executableURL = CLIRunner.binary
            process.arguments = arguments + ["--device", device]
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardOutput = try FileHandle(forWritingTo: stdout)
            process.standardError = try FileHandle(forWritingTo: stderr)
            process.standardInput = FileHandle.nullDevice
            try process.run()
            return process
        }

        /// Runs the CLI in a new session (setsid), so it has no controlling terminal to ask on
        /// even when the tests run from one.
        func runWithoutTerminal(_ arguments: [String], input: String) throws -> CLIRunner.Result {
            // -w: setsid forks when the child already leads its process group; wait for the tool.
            try CLIRunner.run(
                executable: URL(fileURLWithPath: "/usr/bin/setsid"),
                ["-w", CLIRunner.binary.path] + arguments + ["--device", device], input: input,
                environment: environment)
        }

        /// Runs a command that must succeed and print a JSON object.
        func object(
            _ arguments: [String], input: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
        )
            throws -> [String: Any]
        {
            let result = try run(arguments + ["--json"], input: input)
            try #require(result.status == 0, "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
            return try result.object()
        }

        func cycle() throws {
            try powerCycle()
            poweredUp = Date()
        }

        /// Waits until the key was powered up more than 10 s ago (its reset window has closed),
        /// asking it for getInfo meanwhile: pcscd powers an idle card down about a second after
        /// its last use and up again at the next connection, which is a power-up like a card put
        /// on the reader.
        func waitOutResetWindow() throws {
            var seen = powerUps?()
            let limit = Date(timeIntervalSinceNow: 40)
            while Date().timeIntervalSince(poweredUp) < 10.5 {
                guard Date() < limit else {
                    throw CLITestError("the key kept being powered up; its reset window never closed")
                }
                if let now = powerUps?(), now != seen {
                    seen = now
                    poweredUp = Date()
                }
                _ = try run(["info"])
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }

    /// The one the issue asks for: the ctap21 profile, everything else default.
    static let serveArguments = ["--profile", "ctap21"]

    @Test func administrationOverUDP() throws {
        let port = CLIRunner.freeUDPPort()
        let work = try ChoiceCommandTests.scratch("admin-udp")
        defer { try? FileManager.default.removeItem(at: work) }
        let key = try ChoiceCommandTests.ServedKey(
            ["--udp", "127.0.0.1:\(port)", "--state", work.appendingPathComponent("state").path]
                + Self.serveArguments,
            log: work.appendingPathComponent("serve.log"))
        let device = "udp:127.0.0.1:\(port)?local=0"
        let waitForKey = { () throws -> Void in
            for _ in 0..<100 {
                if (try? CLIRunner.run(["info", "--device", device]).status) == 0 { return }
                Thread.sleep(forTimeInterval: 0.05)
            }
            throw CLITestError("the UDP key did not answer within 5 s: \(key.logText)")
        }
        let bench = Bench(
            device: device, environment: [:],
            powerCycle: {
                // SIGUSR1: the key goes silent for 2 s and comes back powered up.
                kill(key.process.processIdentifier, SIGUSR1)
                Thread.sleep(forTimeInterval: 2.2)
                try waitForKey()
            })
        try waitForKey()
        bench.poweredUp = Date()
        try Self.administer(
            bench, reinsert: { kill(key.process.processIdentifier, SIGUSR1) },
            python: PythonFido2.interpreter(),
            udpPort: port)
    }

    @Test func administrationOverPCSC() throws {
        try PCSCBed.with { bed in
            let vpcd = try #require(
                bed.environment["SECURITYKEY_VPCD_PORT"].flatMap(Int.init), "the bed names no vpcd port")
            let arguments =
                ["--pcsc", "127.0.0.1:\(vpcd)", "--state", bed.path("state")] + Self.serveArguments
            var served = 0
            var key: ChoiceCommandTests.ServedKey?
            let listed = { () -> Bool in
                let keys = try? bed.run(["list", "--json"]).json() as? [[String: Any]]
                return keys?.contains(where: { $0["uri"] as? String == bed.device }) == true
            }
            let serve = { () throws -> Void in
                served += 1
                key = try ChoiceCommandTests.ServedKey(
                    arguments, environment: bed.environment,
                    log: URL(fileURLWithPath: bed.path("serve-\(served).log")))
                let deadline = Date(timeIntervalSinceNow: 15)
                while !listed() {
                    guard Date() < deadline else {
                        throw CLITestError("the card did not appear: \(key?.logText ?? "")")
                    }
                    Thread.sleep(forTimeInterval: 0.1)
                }
            }
            // The card leaves the reader (pcscd sees it gone: it polls, so a quick reconnect
            // could pass unnoticed) and comes back: a new vpcd connection, powered up.
            let replace = { () throws -> Void in
                key = nil
                let gone = Date(timeIntervalSinceNow: 5)
                while Date() < gone, listed() { Thread.sleep(forTimeInterval: 0.1) }
                try serve()
            }
            try serve()
            let bench = Bench(device: bed.device, environment: bed.environment, powerCycle: replace)
            bench.poweredUp = Date()
            bench.hostPowersKey = true
            // pcscd powers the card on (and on again after a reset of the reader) as it sees fit:
            // the key's log (-v) says when.
            bench.powerUps = { key?.logText.components(separatedBy: "card power on").count ?? 0 }
            try Self.administer(bench, reinsert: replace, python: nil, udpPort: nil)
            key = nil
        }
    }

    /// The scenario: a blocked PIN and its reset within the window, credentials, config, and a
    /// reset outside the window that succeeds once the key is re-inserted.
    static func administer(
        _ bench: Bench, reinsert: @escaping () throws -> Void, python: String?, udpPort: Int?
    )
        throws
    {
        let info = try bench.object(["info"])
        #expect((info["versions"] as? [String])?.contains("FIDO_2_1") == true)
        // The documented default capacity of the virtual key (VirtualKey.Configuration).
        #expect(info["remainingDiscoverableCredentials"] as? Int == 25)
        let capacity = try #require(info["remainingDiscoverableCredentials"] as? Int)

        try blockedPIN(bench)
        try credentials(bench, capacity: capacity, python: python, udpPort: udpPort)
        try config(bench)
        try resetAfterReinsertion(bench, capacity: capacity, reinsert: reinsert)
    }

    /// Eight wrong PINs, a power cycle after every third as the key demands; then the key says
    /// its PIN is blocked and the tool names reset as the only way back. A reset within the
    /// window (right after the last power-up) needs no re-insertion.
    static func blockedPIN(_ bench: Bench) throws {
        #expect(try bench.run(["pin", "set", "--pin-stdin"], input: "1234\n").status == 0)
        let fresh = try bench.object(["pin", "status"])
        #expect(fresh["pinSet"] as? Bool == true)
        #expect(fresh["pinRetries"] as? Int == 8)
        #expect(fresh["pinBlocked"] as? Bool == false)

        let verified = try bench.object(["pin", "verify", "--pin-stdin"], input: "1234\n")
        #expect(verified["verified"] as? Bool == true)
        #expect(verified["pinRetries"] as? Int == 8)

        // Three wrong PINs, then the key wants a power cycle before the next attempt.
        for expectedRetries in [5, 2] {
            let wrong = try bench.run(
                ["pin", "verify", "--pin-stdin", "--json"], input: "0000\n0000\n0000\n0000\n")
            #expect(wrong.status == 5, "\(wrong.stderr)")
            let status = try bench.object(["pin", "status"])
            #expect(status["pinRetries"] as? Int == expectedRetries)
            if !bench.hostPowersKey { #expect(status["powerCycleRequired"] as? Bool == true) }
            #expect(status["pinBlocked"] as? Bool == false)
            try bench.cycle()
        }
        let last = try bench.run(["pin", "verify", "--pin-stdin", "--json"], input: "0000\n0000\n0000\n")
        #expect(last.status == 5, "\(last.stderr)")

        let blocked = try bench.object(["pin", "status"])
        #expect(blocked["pinBlocked"] as? Bool == true)
        #expect(blocked["pinRetries"] as? Int == 0)
        let text = try bench.run(["pin", "status"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("reset"), "\(text.stdout)")
        #expect(text.stdout.contains("erases every credential"), "\(text.stdout)")
        // Even the right PIN is refused now, with the same guidance.
        let refused = try bench.run(["pin", "verify", "--pin-stdin", "--json"], input: "1234\n")
        #expect(refused.status == 5)
        let error = try refused.object()["error"] as? [String: Any]
        let message = error?["message"] as? String ?? ""
        #expect(message.contains("Only a reset"), "\(refused.stdout)")
        #expect(message.contains("erases every credential"), "\(refused.stdout)")
        #expect(refused.stderr.contains("Only a reset"))

        // The last power-up was moments ago: the key accepts a reset without re-insertion.
        if Date().timeIntervalSince(bench.poweredUp) > 7 { try bench.cycle() }
        let reset = try bench.object(["reset", "--yes", "--timeout", "10"])
        #expect(reset["reset"] as? Bool == true)
        #expect(reset["reinserted"] as? Bool == false)
        #expect(reset["device"] as? String == bench.device)
        let after = try bench.object(["pin", "status"])
        #expect(after["pinSet"] as? Bool == false)
        #expect(after["pinBlocked"] as? Bool == false)
        #expect(after["pinRetries"] as? Int == 8)
    }

    /// Two discoverable credentials, counted, listed, renamed and deleted, as the key (and
    /// python-fido2's CredentialManagement, over UDP) sees them afterwards.
    static func credentials(_ bench: Bench, capacity: Int, python: String?, udpPort: Int?) throws {
        #expect(try bench.run(["pin", "set", "--pin-stdin"], input: "1234\n").status == 0)
        let empty = try bench.object(["credentials", "info", "--pin-stdin"], input: "1234\n")
        #expect(empty["existing"] as? Int == 0)
        #expect(empty["remaining"] as? Int == capacity)

        var ids: [String: String] = [:]
        for (rp, user, display) in [("example.org", "alice", "Alice A"), ("example.com", "bob", "Bob B")] {
            let registered = try bench.object(
                [
                    "register", "--rp", rp, "--user", user, "--display-name", display, "--resident",
                    "--pin-stdin",
                ],
                input: "1234\n")
            ids[user] = try #require(registered["id"] as? String)
        }
        let alice = try #require(ids["alice"]), bob = try #require(ids["bob"])

        let two = try bench.object(["credentials", "info", "--pin-stdin"], input: "1234\n")
        #expect(two["existing"] as? Int == 2)
        #expect(two["remaining"] as? Int == capacity - 2)
        #expect(two["device"] as? String == bench.device)

        let listed = try list(bench)
        #expect(listed.count == 2)
        #expect(listed[alice]?["rpId"] as? String == "example.org")
        #expect(listed[alice]?["userName"] as? String == "alice")
        #expect(listed[alice]?["displayName"] as? String == "Alice A")
        #expect(listed[bob]?["rpId"] as? String == "example.com")
        #expect(listed[bob]?["userName"] as? String == "bob")
        #expect(listed[bob]?["largeBlobKey"] as? Bool == false)

        let onlyOrg = try list(bench, rp: "example.org")
        #expect(Array(onlyOrg.keys) == [alice])
        #expect(try list(bench, rp: "example.net").isEmpty)

        let updated = try bench.object(
            [
                "credentials", "update", alice, "--name", "alice2", "--display-name", "Alice Two",
                "--pin-stdin",
            ],
            input: "1234\n")
        #expect(updated["updated"] as? String == alice)
        #expect(updated["userName"] as? String == "alice2")
        let renamed = try list(bench)
        #expect(renamed[alice]?["userName"] as? String == "alice2")
        #expect(renamed[alice]?["displayName"] as? String == "Alice Two")
        #expect(renamed[bob]?["userName"] as? String == "bob")

        // No terminal and no --yes: refused as a usage error, nothing deleted.
        let unconfirmed = try bench.runWithoutTerminal(
            ["credentials", "delete", bob, "--pin-stdin", "--json"], input: "1234\n")
        #expect(unconfirmed.status == 64, "\(unconfirmed.stderr)")
        #expect(unconfirmed.stderr.contains("--yes"))
        #expect(try list(bench)[bob] != nil)

        let deleted = try bench.object(
            ["credentials", "delete", bob, "--rp", "example.com", "--yes", "--pin-stdin"], input: "1234\n")
        #expect(deleted["deleted"] as? String == bob)
        let remaining = try list(bench)
        #expect(Array(remaining.keys) == [alice])
        let one = try bench.object(["credentials", "info", "--pin-stdin"], input: "1234\n")
        #expect(one["existing"] as? Int == 1)
        #expect(one["remaining"] as? Int == capacity - 1)

        // python-fido2 reads the same credentials through its own CredentialManagement.
        if let python, let udpPort {
            let view = try PythonFido2.runScript(
                python, "list_credentials.py", ["\(udpPort)"], input: "1234\n")
            #expect(view["existing"] as? Int == 1)
            #expect(view["remaining"] as? Int == capacity - 1)
            let credentials = view["credentials"] as? [[String: Any]] ?? []
            #expect(credentials.count == 1)
            #expect(credentials.first?["credentialId"] as? String == alice)
            #expect(credentials.first?["rpId"] as? String == "example.org")
            #expect(credentials.first?["userName"] as? String == "alice2")
            #expect(credentials.first?["displayName"] as? String == "Alice Two")
        }
    }

    /// `credentials list --json`, keyed by credential ID.
    static func list(_ bench: Bench, rp: String? = nil) throws -> [String: [String: Any]] {
        let result = try bench.run(
            ["credentials", "list", "--pin-stdin", "--json"] + (rp.map { ["--rp", $0] } ?? []),
            input: "1234\n")
        try #require(result.status == 0, "\(result.stderr)")
        let array = try #require(try result.json() as? [[String: Any]], "\(result.stdout)")
        var byID: [String: [String: Any]] = [:]
        for credential in array {
            let id = try #require(credential["credentialId"] as? String)
            byID[id] = credential
        }
        #expect(byID.count == array.count, "one entry per credential")
        return byID
    }

    /// always-uv on, min-pin-length with a forced change and the change through `pin verify`,
    /// and enterprise attestation, each as getInfo shows it afterwards.
    static func config(_ bench: Bench) throws {
        let before = try bench.object(["info"])
        let beforeOptions = before["options"] as? [String: Any]
        #expect(beforeOptions?["alwaysUv"] as? Bool == false)
        #expect(beforeOptions?["ep"] as? Bool == false)

        let alwaysUV = try bench.object(
            ["config", "always-uv", "on", "--yes", "--pin-stdin"], input: "1234\n")
        #expect(alwaysUV["alwaysUv"] as? Bool == true)
        #expect(alwaysUV["changed"] as? Bool == true)
        #expect((try bench.object(["info"])["options"] as? [String: Any])?["alwaysUv"] as? Bool == true)
        // A registration without the PIN is now refused by the key.
        let withoutPIN = try bench.run(
            ["register", "--rp", "example.org", "--user", "carol", "--pin-stdin", "--json"], input: "")
        #expect(withoutPIN.status == 5, "\(withoutPIN.stderr)")
        let again = try bench.object(["config", "always-uv", "on", "--yes", "--pin-stdin"], input: "1234\n")
        #expect(again["changed"] as? Bool == false)

        let minimum = try bench.object(
            ["config", "min-pin-length", "6", "--force-change", "--yes", "--pin-stdin"], input: "1234\n")
        #expect(minimum["minPINLength"] as? Int == 6)
        #expect(minimum["forcePINChange"] as? Bool == true)
        let forced = try bench.object(["pin", "status"])
        #expect(forced["forcePINChange"] as? Bool == true)
        #expect(forced["minPINLength"] as? Int == 6)
        // The new PIN first, then the current one.
        let changed = try bench.object(["pin", "verify", "--pin-stdin"], input: "123456\n1234\n")
        #expect(changed["verified"] as? Bool == true)
        let settled = try bench.object(["pin", "status"])
        #expect(settled["forcePINChange"] as? Bool == false)
        #expect(settled["minPINLength"] as? Int == 6)
        #expect(
            try bench.object(["pin", "verify", "--pin-stdin"], input: "123456\n")["verified"] as? Bool == true
        )

        let enterprise = try bench.object(
            ["config", "enterprise-attestation", "enable", "--yes", "--pin-stdin"], input: "123456\n")
        #expect(enterprise["enterpriseAttestation"] as? Bool == true)
        #expect((try bench.object(["info"])["options"] as? [String: Any])?["ep"] as? Bool == true)
    }

    /// More than 10 s after power-up the key refuses reset; the tool asks for re-insertion,
    /// waits for the same key and resets it then.
    static func resetAfterReinsertion(_ bench: Bench, capacity: Int, reinsert: @escaping () throws -> Void)
        throws
    {
        try bench.waitOutResetWindow()
        let work = try ChoiceCommandTests.scratch("admin-reset")
        defer { try? FileManager.default.removeItem(at: work) }
        let out = work.appendingPathComponent("reset.out"), err = work.appendingPathComponent("reset.err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let reset = try bench.start(
            ["reset", "--yes", "--json", "--timeout", "25"], stdout: out, stderr: err)
        defer { if reset.isRunning { reset.terminate() } }
        let readErrors = {
            String(decoding: FileManager.default.contents(atPath: err.path) ?? Data(), as: UTF8.self)
        }
        let asked = Date(timeIntervalSinceNow: 15)
        while reset.isRunning, Date() < asked, !readErrors().contains("remove it now and insert it again") {
            Thread.sleep(forTimeInterval: 0.05)
        }
        try #require(
            readErrors().contains("remove it now and insert it again"),
            "no re-insert instruction (reset \(reset.isRunning ? "still waiting" : "ended")): \(readErrors())"
        )
        try reinsert()
        let deadline = Date(timeIntervalSinceNow: 25)
        while reset.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        try #require(!reset.isRunning, "reset did not end after the re-insertion")
        #expect(reset.terminationStatus == 0, "\(readErrors())")
        let output =
            try JSONSerialization.jsonObject(with: FileManager.default.contents(atPath: out.path) ?? Data())
            as? [String: Any]
        #expect(output?["reset"] as? Bool == true)
        #expect(output?["reinserted"] as? Bool == true)
        #expect(output?["device"] as? String == bench.device)

        // Everything is gone: PIN, credentials, settings.
        let status = try bench.object(["pin", "status"])
        #expect(status["pinSet"] as? Bool == false)
        #expect(status["minPINLength"] as? Int == 4)
        let info = try bench.object(["info"])
        #expect(info["remainingDiscoverableCredentials"] as? Int == capacity)
        #expect((info["options"] as? [String: Any])?["alwaysUv"] as? Bool == false)
        #expect((info["options"] as? [String: Any])?["ep"] as? Bool == false)
        #expect(try bench.run(["pin", "set", "--pin-stdin"], input: "1234\n").status == 0)
        let counted = try bench.object(["credentials", "info", "--pin-stdin"], input: "1234\n")
        #expect(counted["existing"] as? Int == 0)
        #expect(try list(bench).isEmpty)
    }
}
