import Foundation

/// The default run's main part: one virtual key per transport, our host and the other hosts as
/// driver processes against it, alternating in rounds; a table of median, p95, CPU per operation
/// and the ratios ours/other.
struct HostComparison {
    /// One host: a driver process and how to start it.
    struct Host {
        var name: String
        var executable: String
        var arguments: [String]
    }

    /// What one host measured for one operation, summed over the rounds.
    struct Tally {
        var latencies: [UInt64] = []
        var cpuNanoseconds: UInt64 = 0
        var error: String?
    }

    let environment: BenchEnvironment
    /// Operations per host per operation.
    let count: Int
    /// How many alternating rounds `count` is split into.
    let rounds: Int

    static let ours = "securitykey"
    static let python = "python-fido2"
    static let libfido2 = "libfido2"

    /// The UDP comparison: ours, python-fido2 and (when built) libfido2.
    func runUDP() {
        let port: UInt16
        do { port = try BenchEnvironment.freeUDPPort() } catch {
            StandardStreams.out("CTAPHID/UDP: not run: \(error.message)")
            return
        }
        let uri = "udp:127.0.0.1:\(port)"
        run(
            title: "CTAP2 over CTAPHID/UDP", keyArguments: ["--udp", "127.0.0.1:\(port)"],
            keyEnvironment: [:],
            uri: uri, oursURI: uri + "?local=0", withLibfido2: true)
    }

    /// The PC/SC comparison (ours and python-fido2) in a private test bed, when one can be started.
    func runPCSC() {
        let bed: PCSCBed
        do { bed = try PCSCBed(repository: environment.repository, readerPairs: 1, name: "hosts") } catch {
            StandardStreams.out("\nCTAP2 over PC/SC: not run: \(error.message)")
            return
        }
        defer { bed.stop() }
        guard let reader = bed.readers.first else { return }
        var keyEnvironment = bed.environment
        keyEnvironment["SECURITYKEY_VPCD_PORT"] = String(bed.vpcdPort)
        run(
            title: "CTAP2 over PC/SC (pcscd + vpcd, reader \"\(reader)\")", keyArguments: ["--pcsc"],
            keyEnvironment: keyEnvironment, uri: "pcsc:\(reader)", oursURI: "pcsc:\(reader)",
            withLibfido2: false)
    }

    private func run(
        title: String, keyArguments: [String], keyEnvironment: [String: String], uri: String, oursURI: String,
        withLibfido2: Bool
    ) {
        let perRound = max(1, count / rounds)
        StandardStreams.out("")
        StandardStreams.out(
            "\(title): one virtual key (securitykey virtual serve \(keyArguments[0]) --presence auto), "
                + "\(perRound * rounds) operations per host per operation in \(rounds) alternating rounds of \(perRound)"
        )
        let key: ChildProcess
        do {
            key = try ChildProcess(
                name: "virtual-key\(keyArguments[0])", executable: environment.securityKeyBinary,
                arguments: ["virtual", "serve"] + keyArguments + ["--presence", "auto", "--json"],
                environment: keyEnvironment, logDirectory: environment.logDirectory)
            _ = try key.readJSON(timeout: .seconds(60))
        } catch {
            StandardStreams.out("  not run: the virtual key did not start: \(error.message)")
            return
        }
        defer { key.stop(quitLine: nil) }

        var hosts: [Host] = [
            Host(
                name: Self.ours, executable: environment.benchBinary,
                arguments: ["drive", "--device", oursURI])
        ]
        var missing: [(String, String)] = []
        if let python = environment.python {
            hosts.append(
                Host(
                    name: Self.python, executable: python,
                    arguments: ["\(environment.repository)/scripts/bench/fido2_driver.py", "--device", uri]))
        } else {
            missing.append(
                (Self.python, "no Python with python-fido2 (set SECURITYKEY_PYTHON or run make pydeps)"))
        }
        if withLibfido2 {
            if let driver = environment.libfido2Driver {
                hosts.append(Host(name: Self.libfido2, executable: driver, arguments: ["--device", uri]))
            } else {
                missing.append(
                    (Self.libfido2, "driver not built (.build/bench/fido2-udp-driver; make bench-drivers)"))
            }
        }

        var drivers: [(Host, ChildProcess)] = []
        defer { for (_, driver) in drivers { driver.stop() } }
        for host in hosts {
            do {
                let driver = try ChildProcess(
                    name: "\(host.name)-\(keyArguments[0].dropFirst(2))", executable: host.executable,
                    arguments: host.arguments, environment: keyEnvironment,
                    logDirectory: environment.logDirectory)
                let ready = try driver.readJSON(timeout: .seconds(60))
                guard ready["ready"] as? Bool == true else {
                    driver.stop()
                    missing.append(
                        (host.name, "driver not ready: \(ready["error"] as? String ?? "no reason given")"))
                    continue
                }
                drivers.append((host, driver))
            } catch {
                missing.append((host.name, "driver did not start: \(error.message)"))
            }
        }

        var tallies: [String: Tally] = [:]
        func slot(_ operation: BenchOperation, _ host: String) -> String { "\(operation.rawValue)/\(host)" }
        // Warm-up batches (not counted): caches, lazy initialisation, the key's first signatures.
        for operation in BenchOperation.allCases {
            for (host, driver) in drivers {
                _ = batch(
                    driver, operation, count: max(1, min(5, perRound)),
                    into: &tallies[slot(operation, host.name), default: Tally()], record: false)
            }
        }
        for round in 0..<rounds {
            for operation in BenchOperation.allCases {
                // Rotate who goes first so no host always runs right after the key idled.
                for index in 0..<drivers.count {
                    let (host, driver) = drivers[(index + round) % drivers.count]
                    batch(
                        driver, operation, count: perRound,
                        into: &tallies[slot(operation, host.name), default: Tally()], record: true)
                }
            }
        }

        let header =
            Figures.pad("op", 9) + Figures.pad("host", 14) + Figures.pad("median", 12)
            + Figures.pad("p95", 12)
            + Figures.pad("CPU/op", 12) + Figures.pad("ours/host wall", 16) + "ours/host CPU"
        StandardStreams.out(header)
        var verdicts: [String] = []
        for operation in BenchOperation.allCases {
            let oursTally = tallies[slot(operation, Self.ours)]
            let oursSummary = oursTally.flatMap { LatencySummary($0.latencies) }
            for host in [Self.ours, Self.python, Self.libfido2] {
                let prefix = Figures.pad(operation.rawValue, 9) + Figures.pad(host, 14)
                if let reason = missing.first(where: { $0.0 == host })?.1 {
                    StandardStreams.out(prefix + reason)
                    continue
                }
                guard let tally = tallies[slot(operation, host)] else { continue }
                if let error = tally.error {
                    StandardStreams.out(prefix + "error: \(error)")
                    continue
                }
                guard let summary = LatencySummary(tally.latencies) else { continue }
                let cpu = Double(tally.cpuNanoseconds) / Double(summary.count)
                var line =
                    prefix + Figures.pad(Figures.milliseconds(summary.median), 12)
                    + Figures.pad(Figures.milliseconds(summary.p95), 12)
                    + Figures.pad(Figures.milliseconds(cpu), 12)
                if host != Self.ours, let oursSummary, let oursTally, oursTally.error == nil {
                    let wall = oursSummary.median / summary.median
                    let oursCPU = Double(oursTally.cpuNanoseconds) / Double(oursSummary.count)
                    line +=
                        Figures.pad(Figures.fixed(wall, decimals: 2), 16)
                        + Figures.fixed(oursCPU / cpu, decimals: 2)
                    if operation != .getinfo {
                        let limit = host == Self.python ? 0.7 : 1.0
                        verdicts.append(
                            "target \(operation.rawValue) wall ours/\(host) <= \(Figures.fixed(limit, decimals: 1)): "
                                + "\(Figures.fixed(wall, decimals: 2)) \(wall <= limit ? "met" : "MISSED")")
                    }
                }
                StandardStreams.out(String(line.reversed().drop(while: { $0 == " " }).reversed()))
            }
        }
        for verdict in verdicts { StandardStreams.out(verdict) }
    }

    /// Runs one batch on a driver and adds it to `tally` when `record` is set.
    @discardableResult
    private func batch(
        _ driver: ChildProcess, _ operation: BenchOperation, count: Int, into tally: inout Tally, record: Bool
    )
        -> Bool
    {
        guard tally.error == nil else { return false }
        do {
            try driver.send("\(operation.rawValue) \(count)")
            // A makeCredential on a slow machine takes milliseconds; allow a generous minute per 100.
            let reply = try driver.readJSON(timeout: .seconds(60 + count * 3 / 5))
            if let error = reply["error"] as? String {
                tally.error = error
                return false
            }
            guard reply["op"] as? String == operation.rawValue,
                let latencies = reply["latencies_ns"] as? [NSNumber], latencies.count == count,
                let cpu = reply["cpu_ns"] as? NSNumber
            else {
                tally.error = "\(driver.name) answered with a malformed result line."
                return false
            }
            if record {
                tally.latencies += latencies.map { UInt64(clamping: max(0, $0.int64Value)) }
                tally.cpuNanoseconds &+= UInt64(clamping: max(0, cpu.int64Value))
            }
            return true
        } catch {
            tally.error = error.message
            return false
        }
    }
}
