import Foundation
import Testing

/// `securitykey register|authenticate --via-daemon`: the CLI as a client of securitykeyd on the
/// bed's bus, its responses verified by python-fido2's Fido2Server and its output compared with
/// the same command run without the daemon.
extension DaemonTests {
    static var cliBinary: String { DaemonBed.binaries.appendingPathComponent("securitykey").path }

    @Test func theCLIRegistersAndSignsInThroughTheDaemon() throws {
        guard let python = pythonInterpreter() else { return }
        let bed = try DaemonBed(keys: 1, pin: Self.pin)
        defer { bed.stop() }
        let out = try bed.client(python, ["cli", Self.cliBinary, Self.pin])
        let object = try #require(jsonObject(out.stdout), "\(out.stdout) \(out.stderr)")
        #expect(object["verified"] as? Bool == true, "\(object)")
        let registration = try #require(object["registration"] as? [String: Any])
        let assertion = try #require(object["assertion"] as? [String: Any])
        // The key the daemon used, as CONNECTED named it.
        #expect(registration["device"] as? String == "udp:127.0.0.1:\(bed.ports[0])")
        #expect(assertion["device"] as? String == "udp:127.0.0.1:\(bed.ports[0])")
        // UV was required: the CLI answered NEEDS_PIN from its PIN source.
        #expect(assertion["userVerified"] as? Bool == true)
        let log = try String(contentsOf: bed.daemonLog, encoding: .utf8)
        #expect(log.contains("PIN entered"))
        #expect(!log.contains(Self.pin))

        // The same members as without the daemon, against a key the daemon does not hold.
        let port = bed.ports[0] + 3
        let direct = Process()
        direct.executableURL = URL(fileURLWithPath: Self.cliBinary)
        direct.arguments = ["virtual", "serve", "--udp", "127.0.0.1:\(port)", "--pin", Self.pin]
        direct.standardOutput = FileHandle.nullDevice
        direct.standardError = FileHandle.nullDevice
        try direct.run()
        defer {
            direct.terminate()
            direct.waitUntilExit()
        }
        var plain: DaemonBed.Output?
        for _ in 0..<50 {
            plain = try DaemonBed.run(
                Self.cliBinary,
                [
                    "register", "--device", "udp:127.0.0.1:\(port)", "--rp", "example.org", "--user", "grace",
                    "--uv", "--pin-stdin", "--json",
                ], input: Self.pin + "\n")
            if plain?.status == 0 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let reference = try #require(jsonObject(plain?.stdout ?? ""), "\(plain?.stderr ?? "")")
        #expect(Set(reference.keys) == Set(registration.keys))
        #expect(
            Set((reference["response"] as? [String: Any] ?? [:]).keys)
                == Set((registration["response"] as? [String: Any] ?? [:]).keys))
    }

    @Test func theCLIChoosesAnAccountAndReportsErrorsThroughTheDaemon() throws {
        let bed = try DaemonBed(keys: 1, pin: Self.pin)
        defer { bed.stop() }
        let route = ["--via-daemon", "--bus-address", bed.address]
        var ids: [String] = []
        for user in ["heidi", "ivan"] {
            let out = try DaemonBed.run(
                Self.cliBinary,
                ["register", "--rp", "example.org", "--user", user, "--resident", "--pin-stdin"] + route,
                input: Self.pin + "\n")
            #expect(out.status == 0, "\(out.stderr)")
            // The plain output, as without the daemon.
            let line = out.stdout.split(separator: "\n").first { $0.hasPrefix("Credential ID:") }
            ids +=
                line.map {
                    [String($0.dropFirst("Credential ID:".count)).trimmingCharacters(in: .whitespaces)]
                } ?? []
            #expect(out.stdout.contains("Attestation format: packed"))
        }
        #expect(ids.count == 2)
        // No --credential: the daemon asks for a choice (SELECT_CREDENTIAL); without a terminal
        // the CLI names the accounts and stops, and --user chooses one.
        let unchosen = try DaemonBed.run(
            Self.cliBinary, ["authenticate", "--rp", "example.org", "--pin-stdin", "--uv", "--json"] + route,
            input: Self.pin + "\n")
        #expect(unchosen.status == 64, "\(unchosen.stderr)")
        #expect(unchosen.stderr.contains("heidi") && unchosen.stderr.contains("ivan"), "\(unchosen.stderr)")
        let signed = try DaemonBed.run(
            Self.cliBinary,
            ["authenticate", "--rp", "example.org", "--user", "ivan", "--pin-stdin", "--uv", "--json"] + route,
            input: Self.pin + "\n")
        #expect(signed.status == 0, "\(signed.stderr)")
        let id = try #require(jsonObject(signed.stdout)?["id"] as? String)
        #expect(id == ids.last)

        // A wrong PIN: the key's answer, with the CLI's exit status for PIN problems.
        let wrong = try DaemonBed.run(
            Self.cliBinary,
            ["authenticate", "--rp", "example.org", "--credential", ids[0], "--uv", "--pin-stdin", "--json"]
                + route,
            input: "000000\n")
        #expect(wrong.status == 5, "\(wrong.stdout) \(wrong.stderr)")
        #expect(jsonObject(wrong.stdout)?["error"] != nil)
        // An origin the RP ID does not belong to: the daemon's SecurityError.
        let foreign = try DaemonBed.run(
            Self.cliBinary,
            [
                "authenticate", "--rp", "example.org", "--origin", "https://evil.example", "--credential",
                ids[0],
            ] + route)
        #expect(foreign.status == 64, "\(foreign.stderr)")
        #expect(foreign.stderr.contains("securitykeyd (SecurityError):"), "\(foreign.stderr)")
        // No daemon on the bus: exit status 3, said plainly.
        bed.stopDaemon()
        let none = try DaemonBed.run(
            Self.cliBinary, ["authenticate", "--rp", "example.org", "--credential", ids[0]] + route)
        #expect(none.status == 3)
        #expect(none.stderr.contains("securitykeyd is not running"), "\(none.stderr)")
        // The daemon chooses the key: --device is a usage error with --via-daemon.
        let device = try DaemonBed.run(
            Self.cliBinary,
            ["authenticate", "--rp", "example.org", "--device", "udp:127.0.0.1:\(bed.ports[0])"] + route)
        #expect(device.status == 64)
        #expect(device.stderr.contains("--via-daemon excludes --device"), "\(device.stderr)")
        // --bus-address alone is a usage error.
        let usage = try DaemonBed.run(
            Self.cliBinary, ["authenticate", "--rp", "example.org", "--bus-address", bed.address])
        #expect(usage.status == 64)
    }

    /// Extensions through the daemon: the CLI writes its typed inputs as WebAuthn JSON, the
    /// daemon applies them, and the CLI reads the results back and prints them as a direct run
    /// does. The expected values come from the test's own inputs (the blob stored), from what
    /// the key stated in its authenticator data (credProtect), and from the PRF's definition:
    /// the same input on the same credential with UV gives the same output each time, and
    /// another input gives another.
    @Test func extensionsGoThroughTheDaemonAndTheirResultsComeBack() throws {
        let bed = try DaemonBed(keys: 1, pin: Self.pin, keyArguments: ["--profile", "ctap21"])
        defer { bed.stop() }
        let route = ["--via-daemon", "--bus-address", bed.address]
        let blob = "c3RvcmVkIHdpdGggdGhlIGNyZWRlbnRpYWw"  // "stored with the credential"
        let register: [String] = [
            "register", "--rp", "example.org", "--user", "judy", "--resident", "--uv", "--pin-stdin", "--json",
            "--cred-props", "--prf", "--prf-salt", "Zmlyc3Q", "--cred-protect", "userVerificationRequired",
            "--cred-blob", blob, "--large-blob", "preferred",
        ]
        let registered = try DaemonBed.run(Self.cliBinary, register + route, input: Self.pin + "\n")
        #expect(registered.status == 0, "\(registered.stderr)")
        let registration = try #require(jsonObject(registered.stdout), "\(registered.stderr)")
        let results = try #require(registration["clientExtensionResults"] as? [String: Any], "\(registration)")
        #expect((results["credProps"] as? [String: Any])?["rk"] as? Bool == true)
        let prf = try #require(results["prf"] as? [String: Any], "\(results)")
        #expect(prf["enabled"] as? Bool == true)
        // The virtual key has no hmac-secret-mc: no PRF results at registration, as without the daemon.
        #expect(prf["results"] == nil)
        #expect(results["credBlob"] as? Bool == true)
        #expect((results["largeBlob"] as? [String: Any])?["supported"] as? Bool == true)
        // Level 3 (userVerificationRequired), as the key's authenticator data states it.
        #expect(registration["credProtect"] as? Int == 3, "\(registration)")
        let id = try #require(registration["id"] as? String)

        let authenticate: [String] = [
            "authenticate", "--rp", "example.org", "--credential", id, "--uv", "--pin-stdin", "--json",
            "--prf-salt", "Zmlyc3Q", "--prf-salt2", "c2Vjb25k", "--cred-blob",
        ]
        var firsts: [String] = []
        for arguments in [authenticate, Array(authenticate.dropLast(3))] {
            let signed = try DaemonBed.run(Self.cliBinary, arguments + route, input: Self.pin + "\n")
            #expect(signed.status == 0, "\(signed.stderr)")
            let assertion = try #require(jsonObject(signed.stdout), "\(signed.stderr)")
            let outputs = try #require(assertion["clientExtensionResults"] as? [String: Any], "\(assertion)")
            let values = try #require(
                (outputs["prf"] as? [String: Any])?["results"] as? [String: Any], "\(outputs)")
            let first = try #require(values["first"] as? String)
            #expect(first.count == 43)  // 32 bytes in unpadded base64url
            firsts.append(first)
            if arguments == authenticate {
                #expect(values["second"] as? String != nil && values["second"] as? String != first)
                #expect(outputs["getCredBlob"] as? String == blob)
            } else {
                #expect(values["second"] == nil)
                #expect(outputs["getCredBlob"] == nil)
            }
        }
        #expect(firsts.count == 2 && firsts[0] == firsts[1])

        // Raw hmac-secret salts have no WebAuthn JSON form: refused before anything is sent.
        let salt = String(repeating: "ab", count: 32)
        let rawSalt: [String] = ["authenticate", "--rp", "example.org", "--credential", id, "--hmac-salt", salt]
        let raw = try DaemonBed.run(Self.cliBinary, rawSalt + route)
        #expect(raw.status == 64)
        #expect(raw.stderr.contains("use --prf-salt"), "\(raw.stderr)")
        let log = try String(contentsOf: bed.daemonLog, encoding: .utf8)
        for first in firsts { #expect(!log.contains(first)) }
    }


    /// A request that ends while the CLI shows a terminal PIN prompt (here: its deadline
    /// passes, nobody types) ends the CLI with the daemon's reason, instead of leaving it
    /// waiting for a PIN nobody asks for any more. The CLI runs on a pseudo-terminal of its own
    /// (python's pty), so it prompts as it does for a user.
    @Test func aRequestThatEndsDuringThePINPromptEndsTheCLI() throws {
        guard let python = pythonInterpreter() else { return }
        let bed = try DaemonBed(keys: 1, pin: Self.pin)
        defer { bed.stop() }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Python/terminal_prompt.py").path
        // The daemon gives a request at least 10 s (WebAuthn's lower bound) plus 2 s to claim keys.
        let run = try DaemonBed.run(
            python,
            [
                script, "30", "PIN for the security key", Self.cliBinary, "register", "--rp", "example.org",
                "--user", "kim", "--uv", "--timeout", "1", "--via-daemon", "--bus-address", bed.address,
            ])
        let fields = run.stdout.split(separator: " ").map(String.init)
        try #require(fields.count == 3, "\(run.stdout) \(run.stderr)")
        #expect(fields[0] == "prompted", "\(run.stderr)")
        #expect(fields[1] == "exited:4", "\(run.stdout) \(run.stderr)")
        #expect((Double(fields[2].trimmingCharacters(in: .whitespacesAndNewlines)) ?? 99) < 20, "\(run.stdout)")
        #expect(run.stderr.contains("securitykeyd (NotAllowedError)"), "\(run.stderr)")
    }

}
