import Foundation
import TestProcesses
import Testing

/// Four programs on one PC/SC card at once, in a private PC/SC bed: our CLI, securitykeyd (a
/// registration asked through it), OpenSSH's ssh-keygen enrolling through our provider (in
/// ssh-sk-helper), and python-fido2 (pyscard) reading getInfo. Each either succeeds or says
/// the card is busy and succeeds when tried again, and every result is whole and its own.
///
/// libfido2's tools are not among them: Debian's libfido2 (1.12) is built without PC/SC. They
/// meet our programs on a hidraw key in scripts/hidvm/test-faults.sh.
///
/// Every child has a time limit, and the programs stop trying ``tryingTime`` after they
/// started, so a program that hangs or never gets the card fails the test in bounded time.
@Suite(.serialized)
struct PCSCProgramContentionTests {
    /// What one program ended with, and how many tries it took.
    struct Outcome: Sendable {
        var output: ProcessOutput
        var tries: Int
        /// What the tries before the last wrote to standard error, for the failure messages.
        var earlier: [String] = []
    }

    /// One of the programs: its name, whether a failed run of it says the card was busy, and
    /// one run of it.
    struct Program: Sendable {
        var name: String
        var saysBusy: @Sendable (ProcessOutput) -> Bool
        var run: @Sendable () throws -> ProcessOutput
    }

    /// Our CLI's `--json` error says `busy` (its warning while it waits does not count: a
    /// program that waited and then failed otherwise failed).
    static func ourBusy(_ output: ProcessOutput) -> Bool {
        let object = try? JSONSerialization.jsonObject(with: output.stdout) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String == "busy"
    }

    /// What the programs need to reach the card, set up before they start.
    struct Card: Sendable {
        /// The card's URI, `pcsc:READER`.
        var device: String
        /// Its AAGUID as `securitykey info` printed it alone.
        var aaguid: String
        /// The private bus securitykeyd serves on.
        var busAddress: String
    }

    /// How long, from the start, a program told the card is busy tries again. Each holds the
    /// card for a touch (0.7 s) or a getInfo, so all four are through within seconds.
    static let tryingTime = Duration.seconds(30)
    /// How long, in seconds, our programs wait for the card before they say it is busy
    /// (`--timeout`); OpenSSH's calls to our provider have 30 s.
    static let commandTimeout = 20
    /// The limit of each run of a child, past its own: a hang fails the test instead of holding it.
    static let childLimit = Duration.seconds(40)

    /// Runs `program` until it succeeds, until a failure that is not the card being busy, or
    /// until `deadline`: a busy failure then is its last.
    static func attempt(_ program: Program, until deadline: ContinuousClock.Instant) throws -> Outcome {
        var tries = 1
        var earlier: [String] = []
        while true {
            let output = try program.run()
            if output.status == 0 || !program.saysBusy(output) || ContinuousClock.now >= deadline {
                return Outcome(output: output, tries: tries, earlier: earlier)
            }
            earlier.append(output.stdoutText + output.stderrText)
            tries += 1
            Thread.sleep(forTimeInterval: Double.random(in: 0.1...0.5))
        }
    }

    static let pythonInfo = #"""
        import json
        from fido2.pcsc import CtapPcscDevice
        from fido2.ctap2 import Ctap2
        device = next(iter(CtapPcscDevice.list_devices()))
        print(json.dumps({"aaguid": bytes(Ctap2(device).get_info().aaguid).hex()}))
        """#

    @Test func ourCLITheDaemonOpenSSHAndPythonFIDO2ShareOneCard() async throws {
        guard let python = TestProcess.pythonFIDO2 else {
            Issue.record("SECURITYKEY_PYTHON names no python-fido2 interpreter (make pydeps)")
            return
        }
        // Read and used from the threads the blocking work runs on, one at a time but for
        // `path` and `environment`, which the programs only read.
        nonisolated(unsafe) let bed = try OpenSSHBed()
        do {
            try await Self.shareOneCard(bed, python: python)
        } catch {
            try? await TestProcess.onThread { bed.stop() }
            throw error
        }
        try await TestProcess.onThread { bed.stop() }
    }

    static func shareOneCard(_ bed: OpenSSHBed, python: String) async throws {
        nonisolated(unsafe) let bed = bed
        let card = try await TestProcess.onThread { try Self.setUp(bed) }
        let device = card.device, address = card.busAddress
        let environment = bed.environment
        let securitykey = VirtualKeyBed.securitykey
        let timeout = "\(Self.commandTimeout)"
        let programs = [
            Program(name: "cli", saysBusy: Self.ourBusy) {
                try TestProcess.run(
                    securitykey,
                    [
                        "register", "--device", device, "--rp", "cli.example", "--user", "c", "--json",
                        "--timeout", timeout,
                    ],
                    environment: environment, timeout: Self.childLimit)
            },
            Program(name: "daemon", saysBusy: Self.ourBusy) {
                try TestProcess.run(
                    securitykey,
                    [
                        "register", "--via-daemon", "--bus-address", address, "--rp", "daemon.example",
                        "--user", "d", "--json", "--timeout", timeout,
                    ],
                    environment: environment, timeout: Self.childLimit)
            },
            Program(
                name: "ssh-keygen",
                // What our provider tells ssh-sk-helper's standard error, which ssh-keygen shows.
                saysBusy: { $0.stderrText.contains("stayed busy with another application") }
            ) {
                // The provider's own limit is 30 s a call.
                try? FileManager.default.removeItem(atPath: bed.path("ssh-key"))
                try? FileManager.default.removeItem(atPath: bed.path("ssh-key.pub"))
                return try bed.openSSH(
                    "ssh-keygen",
                    [
                        "-t", "ecdsa-sk", "-w", OpenSSHBed.provider, "-f", bed.path("ssh-key"), "-N", "",
                        "-O", "application=ssh:contention",
                    ], timeout: Self.childLimit)
            },
            Program(
                name: "python-fido2",
                // pyscard takes no transaction: while ours hold the card, its APDUs fail. When its
                // getInfo right after SELECT is the one that fails, python-fido2 concludes the
                // card has no CTAP2 and says so ("Device does not support CTAP2"), its way of
                // meeting a busy card (seen once in six runs; our programs are unaffected).
                saysBusy: { output in
                    ["SHARING_VIOLATION", "Sharing violation", "sharing violation", "Device does not support CTAP2"]
                        .contains { output.stderrText.contains($0) }
                }
            ) {
                try TestProcess.run(
                    python, ["-c", Self.pythonInfo], environment: environment, timeout: Self.childLimit)
            },
        ]

        // All four at once, each waiting on a thread of its own.
        let deadline = ContinuousClock.now + Self.tryingTime
        let started = ContinuousClock.now
        let results = await withTaskGroup(of: (String, Result<Outcome, any Error>).self) { group in
            for program in programs {
                group.addTask {
                    do {
                        return (
                            program.name,
                            .success(
                                try await TestProcess.onThread { try Self.attempt(program, until: deadline) })
                        )
                    } catch {
                        return (program.name, .failure(error))
                    }
                }
            }
            var results: [String: Result<Outcome, any Error>] = [:]
            for await (name, result) in group { results[name] = result }
            return results
        }
        var outcomes: [String: Outcome] = [:]
        for (name, result) in results {
            switch result {
            case .success(let outcome): outcomes[name] = outcome
            case .failure(let error): Issue.record("\(name): \(error)")
            }
        }
        // Whether the programs met is up to the scheduler: printed, not required.
        let waited = outcomes.keys.sorted().filter {
            outcomes[$0]?.output.stderrText.contains("busy with another application") == true
        }
        print(
            "PC/SC contention, \(started.duration(to: .now)), tries per program: "
                + outcomes.keys.sorted().map { "\($0) \(outcomes[$0]?.tries ?? 0)" }.joined(separator: ", ")
                + "; waited for the card: \(waited.isEmpty ? "none" : waited.joined(separator: ", "))")
        let daemon = bed.background.first { $0.out.lastPathComponent == "daemon.out" }
        for (name, outcome) in outcomes {
            #expect(
                outcome.output.status == 0,
                """
                \(name) after \(outcome.tries) tries: \(outcome.output.stdoutText) \(outcome.output.stderrText)
                earlier tries: \(outcome.earlier)
                securitykeyd: \(daemon?.stderr ?? "")
                """)
        }
        for (name, outcome) in outcomes where !outcome.earlier.isEmpty {
            print("\(name)'s earlier tries: \(outcome.earlier)")
        }

        // Every result is whole and its own.
        for (name, rp) in [("cli", "cli.example"), ("daemon", "daemon.example")] {
            let printed = outcomes[name]?.output.stdout ?? Data()
            let object = try? JSONSerialization.jsonObject(with: printed) as? [String: Any]
            #expect(object?["rpId"] as? String == rp, "\(name): \(String(decoding: printed, as: UTF8.self))")
            #expect(
                object?["device"] as? String == device, "\(name): \(String(decoding: printed, as: UTF8.self))"
            )
        }
        let pythonInfo =
            try? JSONSerialization.jsonObject(with: outcomes["python-fido2"]?.output.stdout ?? Data())
            as? [String: Any]
        #expect(
            (pythonInfo?["aaguid"] as? String)
                == card.aaguid.replacingOccurrences(of: "-", with: "").lowercased(),
            "\(outcomes["python-fido2"]?.output.stdoutText ?? "")")

        // The enrolled key file signs, through the provider, and OpenSSH checks the signature.
        guard outcomes["ssh-keygen"]?.output.status == 0 else { return }
        let publicKey = try bed.publicKey("ssh-key")
        #expect(publicKey.hasPrefix("sk-ecdsa-sha2-nistp256@openssh.com "), "\(publicKey)")
        let (sign, check) = try await TestProcess.onThread {
            try "contention\n".write(toFile: bed.path("message"), atomically: true, encoding: .utf8)
            let sign = try bed.openSSH(
                "/bin/sh",
                [
                    "-c",
                    "SSH_SK_PROVIDER=\"$1\" exec ssh-keygen -q -Y sign -f \"$2\" -n test \"$3\" </dev/null",
                    "sh", OpenSSHBed.provider, bed.path("ssh-key"), bed.path("message"),
                ], timeout: Self.childLimit)
            let check = try bed.openSSH(
                "/bin/sh",
                [
                    "-c", "exec ssh-keygen -Y check-novalidate -n test -f \"$1\" -s \"$2\" < \"$3\"", "sh",
                    bed.path("ssh-key.pub"), bed.path("message.sig"), bed.path("message"),
                ], timeout: .seconds(20))
            return (sign, check)
        }
        #expect(sign.status == 0, "\(sign.stderrText)")
        #expect(check.status == 0, "\(check.stdoutText) \(check.stderrText)")
        #expect(daemon?.process.isRunning == true, "securitykeyd died: \(daemon?.stderr ?? "")")
    }

    /// Serves the card (each touch takes 0.7 s, so the ceremonies overlap), reads its AAGUID
    /// alone, and starts a private bus with securitykeyd on it, reaching the bed's pcscd, once
    /// it lists the card. Blocks: runs on a thread of its own.
    static func setUp(_ bed: OpenSSHBed) throws -> Card {
        let device = try bed.servePCSC(extra: ["--presence", "delay:700"])
        let info = try bed.securitykey(["info", "--device", device, "--json"])
        guard
            let aaguid = (try? JSONSerialization.jsonObject(with: info.stdout) as? [String: Any])?["aaguid"]
                as? String
        else { throw BedError("info printed no AAGUID: \(info.stdoutText) \(info.stderrText)") }

        let bus = try TestProcess.start(
            URL(fileURLWithPath: "/usr/bin/dbus-daemon"),
            [
                "--session", "--nofork", "--nopidfile", "--address=unix:path=\(bed.path("bus"))",
                "--print-address=1",
            ],
            name: "bus", work: bed.work, environment: bed.environment)
        bed.background.append(bus)
        var address = ""
        for _ in 0..<100 where address.isEmpty {
            address = bus.stdout.split(separator: "\n").first.map(String.init) ?? ""
            if address.isEmpty { Thread.sleep(forTimeInterval: 0.05) }
        }
        guard !address.isEmpty else { throw BedError("dbus-daemon printed no address: \(bus.stderr)") }
        let daemon = try TestProcess.start(
            VirtualKeyBed.products.appendingPathComponent("securitykeyd"), ["--address", address],
            name: "daemon",
            work: bed.work, environment: bed.environment)
        bed.background.append(daemon)
        let reader = String(device.dropFirst("pcsc:".count))
        let listing = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < listing {
            let list = try TestProcess.run(
                "/usr/bin/busctl",
                [
                    "--address=\(address)", "call", "org.securitykey.Daemon1", "/org/securitykey/Daemon1",
                    "org.securitykey.Daemon1", "ListDevices",
                ], environment: bed.environment, timeout: .seconds(10))
            if list.stdoutText.contains(reader) {
                return Card(device: device, aaguid: aaguid, busAddress: address)
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw BedError("securitykeyd does not list \(device): \(daemon.stderr)")
    }
}
