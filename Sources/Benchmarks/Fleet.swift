#if canImport(Glibc)
    import Glibc
#endif
import Authenticators
import CTAP2
import Foundation
import HIDTransport
import Logging
import NFCTransport
import Transport

/// The fleet scenario: K virtual keys; the time to find them all and run getInfo on each.
/// Ours opens and asks them in parallel (a task group); python-fido2 uses threads.
@MainActor
struct Fleet {
    let environment: BenchEnvironment
    /// Measured repetitions per K (after one warm-up).
    let repetitions: Int
    let logger = Logger(label: "securitykey.bench.fleet")

    /// One measurement: the wall time and how many keys answered getInfo.
    struct Probe: Sendable {
        var nanoseconds: UInt64
        var found: Int
    }

    /// One host's probes, its CPU time over them, and the keys' CPU time meanwhile.
    struct Measurement {
        var probes: [Probe]
        var hostCPUNanoseconds: UInt64
        var keysCPUNanoseconds: UInt64?
    }

    /// K keys on UDP, each a `serve --udp` process on its own port.
    func runUDP(sizes: [Int]) async {
        StandardStreams.out("")
        StandardStreams.out(
            "Fleet over CTAPHID/UDP: K keys (one `securitykey virtual serve --udp` each); "
                + "wall time to open every key and run getInfo on it, median of \(repetitions) after 3 warm-ups"
        )
        printHeader()
        var oursMedians: [Int: Double] = [:]
        for size in sizes {
            var keys: [ChildProcess] = []
            defer { for key in keys { key.stop(quitLine: nil) } }
            var uris: [String] = []
            do {
                for index in 0..<size {
                    let port = try BenchEnvironment.freeUDPPort()
                    let key = try ChildProcess(
                        name: "fleet-udp-\(index)", executable: environment.securityKeyBinary,
                        arguments: [
                            "virtual", "serve", "--udp", "127.0.0.1:\(port)", "--presence", "auto", "--json",
                        ],
                        logDirectory: environment.logDirectory)
                    keys.append(key)
                    uris.append("udp:127.0.0.1:\(port)")
                }
                for key in keys { _ = try key.readJSON(timeout: .seconds(60)) }
            } catch {
                StandardStreams.out("\(Figures.pad(String(size), 5))not run: \(error.message)")
                continue
            }
            let endpoints = uris.compactMap { try? UDPEndpoint(uri: $0 + "?local=0") }
            let pids = keys.map(\.pid)
            let ours = await measure(keys: pids) { await self.probeUDP(endpoints) }
            oursMedians[size] = LatencySummary(ours.probes.map(\.nanoseconds))?.median
            let python = pythonFleet(arguments: uris, environment: [:], keys: pids)
            printRow(size: size, ours: ours, python: python)
        }
        if let one = oursMedians[1], let big = sizes.max(), big > 1, let many = oursMedians[big] {
            let ratio = many / one
            StandardStreams.out(
                "target fleet ours K=\(big) < 2 x K=1: \(Figures.fixed(ratio, decimals: 2)) x \(ratio < 2 ? "met" : "MISSED")"
            )
        }
    }

    /// K cards on vpcd readers of one private bed (pcsc-lite serves at most 16 readers).
    func runPCSC(sizes requested: [Int]) async {
        StandardStreams.out("")
        let maximum = 16
        let sizes = requested.map { min($0, maximum) }.reduce(into: [Int]()) {
            if !$0.contains($1) { $0.append($1) }
        }
        StandardStreams.out(
            "Fleet over PC/SC: K cards on vpcd readers of one pcscd with 16 readers (pcsc-lite's limit, so K "
                + "stops at \(maximum)); wall time to list the readers, open each card and run getInfo, median of \(repetitions)"
        )
        let bed: PCSCBed
        do {
            bed = try PCSCBed(repository: environment.repository, readerPairs: maximum / 2, name: "fleet")
        } catch {
            StandardStreams.out("not run: \(error.message)")
            return
        }
        defer { bed.stop() }
        // libpcsclite in this process (ours probes in-process) must reach the bed's pcscd.
        if let socket = bed.environment["PCSCLITE_CSOCK_NAME"] { setenv("PCSCLITE_CSOCK_NAME", socket, 1) }
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
            // The cards reach their readers a moment after the processes start: wait until all answer.
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, await probePCSC().found < size {
                try? await Task.sleep(for: .milliseconds(100))
            }
            let pids = keys.map(\.pid)
            let ours = await measure(keys: pids) { await self.probePCSC() }
            let python = pythonFleet(arguments: ["--pcsc"], environment: bed.environment, keys: pids)
            printRow(size: size, ours: ours, python: python)
        }
    }

    private func printHeader() {
        StandardStreams.out(
            Figures.pad("K", 5) + Figures.pad("securitykey (found)", 24) + Figures.pad("CPU", 11)
                + Figures.pad("python-fido2 (found)", 24) + Figures.pad("CPU", 11)
                + Figures.pad("ours/python", 13)
                + "keys' CPU (during ours | python)")
    }

    private func printRow(size: Int, ours: Measurement, python: Result<Measurement, BenchError>) {
        func cells(_ measurement: Measurement) -> (String, String, Double?) {
            guard let summary = LatencySummary(measurement.probes.map(\.nanoseconds)) else {
                return ("no data", "", nil)
            }
            let found = measurement.probes.map(\.found).min() ?? 0
            let cpu = Double(measurement.hostCPUNanoseconds) / Double(measurement.probes.count)
            return (
                "\(Figures.milliseconds(summary.median)) (\(found)/\(size))", Figures.milliseconds(cpu),
                summary.median
            )
        }
        func keysCPU(_ measurement: Measurement) -> String {
            measurement.keysCPUNanoseconds.map {
                Figures.milliseconds(Double($0) / Double(max(measurement.probes.count, 1)))
            } ?? "n/a"
        }
        let (oursText, oursCPU, oursMedian) = cells(ours)
        var line = Figures.pad(String(size), 5) + Figures.pad(oursText, 24) + Figures.pad(oursCPU, 11)
        switch python {
        case .success(let measurement):
            let (text, cpu, median) = cells(measurement)
            line += Figures.pad(text, 24) + Figures.pad(cpu, 11)
            let ratio = oursMedian.flatMap { o in median.map { Figures.fixed(o / $0, decimals: 2) } } ?? "n/a"
            line += Figures.pad(ratio, 13) + keysCPU(ours) + " | " + keysCPU(measurement)
        case .failure(let error):
            line += error.message
        }
        StandardStreams.out(line)
    }

    /// Three warm-ups, then `repetitions` probes, with this process's and the keys' CPU time over them.
    private func measure(keys: [Int32], _ probe: () async -> Probe) async -> Measurement {
        for _ in 0..<3 { _ = await probe() }
        var probes: [Probe] = []
        let keysBefore = Self.cpuTime(of: keys)
        let cpuBefore = ProcessCPUClock.nanoseconds()
        for _ in 0..<repetitions { probes.append(await probe()) }
        let cpu = ProcessCPUClock.nanoseconds() &- cpuBefore
        let keysAfter = Self.cpuTime(of: keys)
        return Measurement(
            probes: probes, hostCPUNanoseconds: cpu,
            keysCPUNanoseconds: keysBefore.flatMap { before in keysAfter.map { $0 &- before } })
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

    /// Opens every endpoint (CTAPHID_INIT) and runs getInfo, all at once, through the device
    /// layer's directory (the one the CLI and the daemon use).
    func probeUDP(_ endpoints: [UDPEndpoint]) async -> Probe {
        let clock = ContinuousClock()
        let start = clock.now
        let directory = AuthenticatorDirectory(discoveries: [UDPDiscovery(endpoints: endpoints, logger: logger)])
        var found = 0
        for result in await directory.open(uris: endpoints.map(\.uri), deadline: .after(.seconds(5))) {
            guard case .success(let key) = result else { continue }
            found += 1
            await key.close()
        }
        return Probe(nanoseconds: start.duration(to: clock.now).nanoseconds, found: found)
    }

    /// Lists the PC/SC readers, then opens the card in each and runs getInfo, all at once,
    /// through the device layer's directory.
    func probePCSC() async -> Probe {
        let clock = ContinuousClock()
        let start = clock.now
        let directory = AuthenticatorDirectory(discoveries: [PCSCDiscovery(logger: logger)])
        let found = await directory.list(deadline: .after(.seconds(5))).filter { $0.info != nil }.count
        return Probe(nanoseconds: start.duration(to: clock.now).nanoseconds, found: found)
    }

    /// Runs scripts/bench/fido2_fleet.py and parses its one JSON line.
    private func pythonFleet(arguments: [String], environment extra: [String: String], keys: [Int32])
        -> Result<Measurement, BenchError>
    {
        guard let python = environment.python else {
            return .failure(
                BenchError(.usage, "no Python with python-fido2 (set SECURITYKEY_PYTHON or run make pydeps)"))
        }
        do {
            let child = try ChildProcess(
                name: "fleet-python", executable: python,
                arguments: [
                    "\(environment.repository)/scripts/bench/fido2_fleet.py", "--repeat", String(repetitions),
                ]
                    + arguments,
                environment: extra, logDirectory: environment.logDirectory)
            defer { child.stop(quitLine: nil) }
            // The script prints {"warm":true} after its warm-up, then measures.
            _ = try child.readJSON(timeout: .seconds(120))
            let keysBefore = Self.cpuTime(of: keys)
            let reply = try child.readJSON(timeout: .seconds(300))
            let keysAfter = Self.cpuTime(of: keys)
            if let error = reply["error"] as? String { return .failure(BenchError(.child, error)) }
            guard let times = reply["times_ns"] as? [NSNumber], let found = reply["found"] as? [NSNumber],
                times.count == found.count, let cpu = reply["cpu_ns"] as? NSNumber
            else {
                return .failure(BenchError(.child, "fido2_fleet.py printed a malformed line."))
            }
            return .success(
                Measurement(
                    probes: zip(times, found).map {
                        Probe(nanoseconds: UInt64(clamping: max(0, $0.int64Value)), found: $1.intValue)
                    },
                    hostCPUNanoseconds: UInt64(clamping: max(0, cpu.int64Value)),
                    keysCPUNanoseconds: keysBefore.flatMap { before in keysAfter.map { $0 &- before } }))
        } catch {
            return .failure(error)
        }
    }
}
