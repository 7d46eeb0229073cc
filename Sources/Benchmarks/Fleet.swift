#if canImport(Glibc)
    import Glibc
#endif
import Foundation

/// The fleet scenario: K virtual keys, each answering after a real key's processing time; the
/// time to open them all and run getInfo on each, for our host (in parallel), python-fido2
/// (a thread per key) and libfido2 (one key after the other, as a plain C program does).
///
/// Every host is a child process speaking the same lines (scripts/bench/fido2_fleet.py), so each
/// one's CPU time and peak memory are read the same way. Peak memory is the host's `VmHWM`
/// (/proc/PID/status), read after its measured rounds while it waits to be told to quit: `wait4`'s
/// `ru_maxrss` would not do, as Linux carries the spawning process's resident set through
/// fork/clone and exec into it, so every child of this 25 MiB orchestrator would report 25 MiB.
@MainActor
struct Fleet {
    let environment: BenchEnvironment
    /// Measured rounds per K and host (libfido2 does fewer at large K; see ``libfido2Rounds(_:)``).
    let repetitions: Int
    /// Each virtual key's own processing time per CTAP command.
    static let keyLatencyMilliseconds = 20
    /// The longest a sequential host's measured rounds may take in all, which bounds its rounds.
    static let sequentialBudget: Duration = .seconds(20)

    /// One host's rounds, its CPU time over them, the keys' CPU time meanwhile and its peak memory.
    struct Measurement {
        var times: [UInt64]
        var found: [Int]
        var hostCPUNanoseconds: UInt64
        var keysCPUNanoseconds: UInt64?
        var peakResidentKilobytes: Int?
    }

    /// One host of the table.
    struct Host {
        var name: String
        var executable: String
        var arguments: [String]
        var environment: [String: String] = [:]
        /// Why it is not run, when it is not.
        var missing: String?
    }

    /// K keys on UDP, all served by one `securitykey virtual serve --count` process.
    func runUDP(sizes: [Int]) {
        StandardStreams.out("")
        let largest = sizes.max() ?? 1
        StandardStreams.out(
            "Fleet over CTAPHID/UDP: K keys served by one `securitykey virtual serve --count \(largest) "
                + "--latency \(Self.keyLatencyMilliseconds)` process (each key answers every CTAP command after "
                + "\(Self.keyLatencyMilliseconds) ms); wall time per round to open every key and run getInfo on it"
        )
        let keys: ChildProcess
        var uris: [String] = []
        do throws(BenchError) {
            keys = try ChildProcess(
                name: "fleet-keys", executable: environment.securityKeyBinary,
                arguments: [
                    "virtual", "serve", "--udp", "127.0.0.1:0", "--count", String(largest), "--latency",
                    String(Self.keyLatencyMilliseconds), "--presence", "auto", "--json",
                ],
                logDirectory: environment.logDirectory)
            for _ in 0..<largest {
                guard let uri = try keys.readJSON(timeout: .seconds(120))["uri"] as? String else {
                    throw BenchError(.child, "virtual serve --json printed a line without a uri.")
                }
                uris.append(uri)
            }
        } catch {
            StandardStreams.out("not run: \(error.message)")
            return
        }
        defer { keys.stop(quitLine: nil) }
        let keysPID = keys.pid
        // What the serving process costs while its keys wait for hosts.
        let idleBefore = Self.cpuTime(of: [keysPID])
        usleep(2_000_000)
        if let before = idleBefore, let after = Self.cpuTime(of: [keysPID]) {
            let perSecond = Double(after &- before) / 2
            StandardStreams.out(
                "serving process, \(largest) keys idle for 2 s: \(Figures.milliseconds(perSecond)) CPU per second "
                    + "(\(Figures.fixed(perSecond / 10_000_000, decimals: 2)) % of one core)")
        }
        StandardStreams.out(
            "libfido2 runs sequentially: a plain C program over its blocking API opens one key after the other "
                + "(and fido_dev_open runs a getInfo of its own), so it needs about K x 2 x "
                + "\(Self.keyLatencyMilliseconds) ms; fewer rounds at large K")
        printHeader()
        var medians: [String: [Int: Double]] = [:]
        for size in sizes {
            let subset = Array(uris.prefix(size))
            for host in hosts(uris: subset, size: size) {
                let result = measure(host, keys: [keysPID])
                printRow(size: size, host: host.name, result)
                if case .success(let measurement) = result, let summary = LatencySummary(measurement.times) {
                    medians[host.name, default: [:]][size] = summary.median
                }
            }
        }
        if let peak = Self.peakResidentKilobytes(of: keysPID) {
            StandardStreams.out("serving process (\(largest) keys): peak RSS \(Self.mebibytes(peak))")
        }
        for name in ["securitykey", "python-fido2", "libfido2"] {
            guard let one = medians[name]?[1], largest > 1, let many = medians[name]?[largest] else {
                continue
            }
            let ratio = many / one
            let verdict =
                name == "securitykey" ? " (target <= 2 x: \(ratio <= 2 ? "met" : "MISSED"))" : ""
            StandardStreams.out(
                "\(Figures.pad(name, 14)) K=\(largest) / K=1: \(Figures.fixed(ratio, decimals: 2)) x\(verdict)"
                    + " (a sequential host needs \(largest) x)")
        }
    }

    /// The three hosts over `uris`.
    private func hosts(uris: [String], size: Int) -> [Host] {
        let rounds = String(repetitions)
        var list = [
            Host(
                name: "securitykey", executable: environment.benchBinary,
                arguments: ["fleet-probe", "--repeat", rounds, "--warmup", "3"] + uris)
        ]
        let pythonScript = "\(environment.repository)/scripts/bench/fido2_fleet.py"
        list.append(
            Host(
                name: "python-fido2", executable: environment.python ?? "",
                arguments: [pythonScript, "--repeat", rounds] + uris,
                missing: environment.python == nil
                    ? "no Python with python-fido2 (set SECURITYKEY_PYTHON or run make pydeps)" : nil))
        list.append(
            Host(
                name: "libfido2", executable: environment.libfido2Driver ?? "",
                arguments: [
                    "--fleet", "--repeat", String(libfido2Rounds(size)), "--warmup", "1", "--timeout", "5000",
                ] + uris,
                missing: environment.libfido2Driver == nil
                    ? "driver not built (.build/bench/fido2-udp-driver; make bench-drivers)" : nil))
        return list
    }

    /// libfido2's rounds at K keys: as many as the other hosts', or fewer so that its sequential
    /// rounds take at most ``sequentialBudget`` (at least 5).
    func libfido2Rounds(_ size: Int) -> Int {
        let perRound = Double(size * 2 * Self.keyLatencyMilliseconds) / 1000
        let budget = Double(Self.sequentialBudget.components.seconds)
        return max(5, min(repetitions, Int(budget / perRound)))
    }

    /// K cards on vpcd readers of one private bed (pcsc-lite serves at most 16 readers).
    func runPCSC(sizes requested: [Int]) {
        StandardStreams.out("")
        let maximum = 16
        let sizes = requested.map { min($0, maximum) }.reduce(into: [Int]()) {
            if !$0.contains($1) { $0.append($1) }
        }
        StandardStreams.out(
            "Fleet over PC/SC: K cards on vpcd readers of one pcscd with 16 readers (pcsc-lite's limit, so K "
                + "stops at \(maximum)); wall time to list the readers, open each card and run getInfo "
                + "(no latency added: the card's answers go through pcscd); libfido2's driver speaks UDP and hidraw only"
        )
        let bed: PCSCBed
        do {
            bed = try PCSCBed(repository: environment.repository, readerPairs: maximum / 2, name: "fleet")
        } catch {
            StandardStreams.out("not run: \(error.message)")
            return
        }
        defer { bed.stop() }
        printHeader()
        for size in sizes {
            guard size <= bed.readers.count else {
                StandardStreams.out(
                    "\(Figures.pad(String(size), 5))not run: the bed has \(bed.readers.count) readers")
                continue
            }
            var keys: [ChildProcess] = []
            defer { for key in keys { key.stop(quitLine: nil) } }
            do {
                for index in 0..<size {
                    var keyEnvironment = bed.environment
                    keyEnvironment["SECURITYKEY_VPCD_PORT"] = String(Int(bed.vpcdPort) + index)
                    let key = try ChildProcess(
                        name: "fleet-pcsc-\(index)", executable: environment.securityKeyBinary,
                        arguments: ["virtual", "serve", "--pcsc", "--presence", "auto", "--json"],
                        environment: keyEnvironment, logDirectory: environment.logDirectory)
                    keys.append(key)
                }
                for key in keys { _ = try key.readJSON(timeout: .seconds(60)) }
            } catch {
                StandardStreams.out("\(Figures.pad(String(size), 5))not run: \(error.message)")
                continue
            }
            let pids = keys.map(\.pid)
            // The cards reach their readers a moment after the processes start: wait until all answer.
            let ready = Host(
                name: "securitykey", executable: environment.benchBinary,
                arguments: ["fleet-probe", "--repeat", "1", "--warmup", "0", "--pcsc"],
                environment: bed.environment)
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline,
                (try? measure(ready, keys: []).get().found.first) ?? 0 < size
            {
                usleep(100_000)
            }
            let rounds = String(repetitions)
            let hosts = [
                Host(
                    name: "securitykey", executable: environment.benchBinary,
                    arguments: ["fleet-probe", "--repeat", rounds, "--pcsc"], environment: bed.environment),
                Host(
                    name: "python-fido2", executable: environment.python ?? "",
                    arguments: [
                        "\(environment.repository)/scripts/bench/fido2_fleet.py", "--repeat", rounds,
                        "--pcsc",
                    ],
                    environment: bed.environment,
                    missing: environment.python == nil ? "no Python with python-fido2" : nil),
            ]
            for host in hosts { printRow(size: size, host: host.name, measure(host, keys: pids)) }
        }
    }

    private func printHeader() {
        StandardStreams.out(
            Figures.pad("K", 5) + Figures.pad("host", 14) + Figures.pad("median", 13) + Figures.pad("p95", 13)
                + Figures.pad("rounds", 8) + Figures.pad("found", 9) + Figures.pad("CPU/round", 13)
                + Figures.pad("peak RSS", 12) + "keys' CPU/round")
    }

    private func printRow(size: Int, host: String, _ result: Result<Measurement, BenchError>) {
        var line = Figures.pad(String(size), 5) + Figures.pad(host, 14)
        switch result {
        case .success(let measurement):
            guard let summary = LatencySummary(measurement.times) else {
                StandardStreams.out(line + "no data")
                return
            }
            let rounds = Double(max(measurement.times.count, 1))
            line += Figures.pad(Figures.milliseconds(summary.median), 13)
            line += Figures.pad(Figures.milliseconds(summary.p95), 13)
            line += Figures.pad(String(summary.count), 8)
            line += Figures.pad("\(measurement.found.min() ?? 0)/\(size)", 9)
            line += Figures.pad(Figures.milliseconds(Double(measurement.hostCPUNanoseconds) / rounds), 13)
            line += Figures.pad(measurement.peakResidentKilobytes.map(Self.mebibytes) ?? "n/a", 12)
            line += measurement.keysCPUNanoseconds.map { Figures.milliseconds(Double($0) / rounds) } ?? "n/a"
        case .failure(let error):
            line += "not run: " + error.message
        }
        StandardStreams.out(line)
    }

    static func mebibytes(_ kilobytes: Int) -> String {
        "\(Figures.fixed(Double(kilobytes) / 1024, decimals: 1)) MiB"
    }

    /// Runs `host`: waits for its `{"warm":true}`, reads its result line and its peak memory, then
    /// tells it to quit; the keys' (`keys`) CPU time is read around its measured rounds.
    private func measure(_ host: Host, keys: [Int32]) -> Result<Measurement, BenchError> {
        if let missing = host.missing { return .failure(BenchError(.usage, missing)) }
        do {
            let child = try ChildProcess(
                name: "fleet-\(host.name)", executable: host.executable, arguments: host.arguments,
                environment: host.environment, logDirectory: environment.logDirectory)
            defer { child.stop(quitLine: "quit") }
            let warm = try child.readJSON(timeout: .seconds(300))
            if let error = warm["error"] as? String { return .failure(BenchError(.child, error)) }
            let keysBefore = Self.cpuTime(of: keys)
            let reply = try child.readJSON(timeout: .seconds(600))
            let keysAfter = Self.cpuTime(of: keys)
            let peak = Self.peakResidentKilobytes(of: child.pid)
            if let error = reply["error"] as? String { return .failure(BenchError(.child, error)) }
            guard let times = reply["times_ns"] as? [NSNumber], let found = reply["found"] as? [NSNumber],
                times.count == found.count, let cpu = reply["cpu_ns"] as? NSNumber
            else {
                return .failure(BenchError(.child, "\(host.name) printed a malformed line."))
            }
            return .success(
                Measurement(
                    times: times.map { UInt64(clamping: max(0, $0.int64Value)) },
                    found: found.map(\.intValue),
                    hostCPUNanoseconds: UInt64(clamping: max(0, cpu.int64Value)),
                    keysCPUNanoseconds: keys.isEmpty
                        ? nil : keysBefore.flatMap { before in keysAfter.map { $0 &- before } },
                    peakResidentKilobytes: peak))
        } catch {
            return .failure(error)
        }
    }

    /// The summed user + system CPU time of `pids` (/proc/PID/stat, clock ticks of 10 ms).
    static func cpuTime(of pids: [Int32]) -> UInt64? {
        let ticksPerSecond = UInt64(max(sysconf(Int32(_SC_CLK_TCK)), 1))
        var total: UInt64 = 0
        for pid in pids {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // Fields after "(comm)": state is field 3, utime 14 and stime 15.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else {
                return nil
            }
            total += (user + system) * 1_000_000_000 / ticksPerSecond
        }
        return total
    }

    /// The peak resident set of a running process in KiB (`VmHWM` in /proc/PID/status).
    static func peakResidentKilobytes(of pid: Int32) -> Int? {
        ProcessFootprint.statusKilobytes("VmHWM", path: "/proc/\(pid)/status")
    }
}
