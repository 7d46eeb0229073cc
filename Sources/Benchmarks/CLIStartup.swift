#if canImport(Glibc)
    import Glibc
#endif

/// The `startup` section: how long the `securitykey` CLI takes from `exec` to its first byte on
/// the wire, and its peak memory (issue 30: first byte within 8 ms, `info` within 12 MiB).
///
/// First byte: this process binds a UDP socket on 127.0.0.1, starts
/// `securitykey info --device udp:127.0.0.1:PORT?local=0` and times from just before
/// `posix_spawn` to the arrival of the CLI's first datagram (its CTAPHID_INIT), then kills the
/// CLI: nothing answers, so only start-up, argument parsing, opening the socket and framing
/// the first report are in the figure. `--version` is timed from spawn to exit the same way.
///
/// Peak memory: a whole `securitykey info --device ...` against a virtual key, run under
/// `/usr/bin/time -f %M` (GNU time forks and execs it). Not measured from here because Linux
/// carries the address space of whoever spawns into a child's `ru_maxrss` at `exec`, and this
/// process is larger than the CLI; a small forking parent keeps the figure the CLI's own.
struct CLIStartup {
    let environment: BenchEnvironment
    let runs: Int
    /// Issue 30's line for exec to first byte on the wire (issue 22's was 30 ms).
    static let firstByteTarget: Double = 8_000_000
    /// Issue 30's line for the peak memory of `info`, in KiB.
    static let infoPeakTarget: UInt64 = 12 * 1024

    func run() {
        StandardStreams.out("")
        StandardStreams.out(
            "CLI start-up: securitykey from posix_spawn to its first UDP datagram (info --device udp:...), "
                + "and to exit for --version; \(runs) runs each, alternating")
        var firstByte: [UInt64] = []
        var firstByteCPU: [UInt64] = []
        var version: [UInt64] = []
        var failures: [String] = []
        for _ in 0..<runs {
            switch timeToFirstDatagram() {
            case .success(let (nanoseconds, cpu)):
                firstByte.append(nanoseconds)
                if let cpu { firstByteCPU.append(cpu) }
            case .failure(let error): failures.append(error.message)
            }
            switch timeToExit(arguments: ["--version"]) {
            case .success(let nanoseconds): version.append(nanoseconds)
            case .failure(let error): failures.append(error.message)
            }
        }
        line("first byte (info)", firstByte)
        // The CLI's own CPU time until it was killed just after its first datagram: what load from
        // other processes cannot inflate, unlike the wall time above.
        line("  its CPU (user+sys)", firstByteCPU)
        line("--version to exit", version)
        if let first = failures.first {
            StandardStreams.out("  \(failures.count) runs failed; the first: \(first)")
        }
        if let summary = LatencySummary(firstByte) {
            let met = summary.median <= Self.firstByteTarget
            StandardStreams.out(
                "target CLI start to first byte <= 8 ms (median): \(Figures.milliseconds(summary.median)) "
                    + (met ? "met" : "MISSED"))
        } else {
            StandardStreams.out("target CLI start to first byte <= 8 ms (median): unknown (no run succeeded)")
        }
        peakMemory()
    }

    private func line(_ label: String, _ samples: [UInt64]) {
        guard let summary = LatencySummary(samples), let low = samples.min(), let high = samples.max() else {
            StandardStreams.out("\(Figures.pad(label, 20)) no successful run")
            return
        }
        StandardStreams.out(
            "\(Figures.pad(label, 20)) median \(Figures.milliseconds(summary.median))  "
                + "p95 \(Figures.milliseconds(summary.p95))  min \(Figures.milliseconds(Double(low)))  "
                + "max \(Figures.milliseconds(Double(high)))  (n=\(summary.count))")
    }

    /// One spawn of the CLI against a silent UDP listener: nanoseconds until its first datagram.
    private func timeToFirstDatagram() -> Result<(UInt64, UInt64?), BenchError> {
        let listener: UDPListener
        do { listener = try UDPListener() } catch { return .failure(error) }
        defer { listener.close() }
        let clock = ContinuousClock()
        let start = clock.now
        let cli: SpawnedProcess
        do {
            cli = try SpawnedProcess(
                executable: environment.securityKeyBinary,
                arguments: ["info", "--device", "udp:127.0.0.1:\(listener.port)?local=0", "--timeout", "5"],
                environment: [:], errorPath: "/dev/null")
        } catch { return .failure(error) }
        defer {
            cli.signal(SIGKILL)
            _ = cli.waitForExit(within: .seconds(5))
        }
        guard listener.waitForDatagram(milliseconds: 5_000) else {
            return .failure(BenchError(.timeout, "The CLI sent nothing within 5 s."))
        }
        let elapsed = start.duration(to: clock.now).nanoseconds
        return .success((elapsed, cli.killAndReapCPU()))
    }

    /// One spawn of the CLI with `arguments`: nanoseconds until it exited with status 0.
    private func timeToExit(arguments: [String]) -> Result<UInt64, BenchError> {
        let clock = ContinuousClock()
        let start = clock.now
        let cli: SpawnedProcess
        do {
            cli = try SpawnedProcess(
                executable: environment.securityKeyBinary, arguments: arguments, environment: [:],
                errorPath: "/dev/null")
        } catch { return .failure(error) }
        cli.closeInput()
        // waitForExit polls every 5 ms, too coarse here: poll every 100 µs for 10 s at most.
        var status: Int32?
        for _ in 0..<100_000 {
            status = cli.exitStatus()
            if status != nil { break }
            usleep(100)
        }
        let elapsed = start.duration(to: clock.now).nanoseconds
        guard let status, status == 0 else {
            return .failure(
                BenchError(.child, "securitykey \(arguments.joined(separator: " ")) failed (\(status.map(String.init) ?? "hung"))."))
        }
        return .success(elapsed)
    }

    /// Peak resident memory of a whole `info` against a virtual key, by GNU time.
    private func peakMemory() {
        let time = "/usr/bin/time"
        guard access(time, X_OK) == 0 else {
            StandardStreams.out("CLI peak memory: not measured (needs GNU time at /usr/bin/time)")
            return
        }
        let port: UInt16
        let key: ChildProcess
        do {
            port = try BenchEnvironment.freeUDPPort()
            key = try ChildProcess(
                name: "startup-key", executable: environment.securityKeyBinary,
                arguments: ["virtual", "serve", "--udp", "127.0.0.1:\(port)", "--presence", "auto", "--json"],
                logDirectory: environment.logDirectory)
            _ = try key.readJSON(timeout: .seconds(60))
        } catch {
            StandardStreams.out("CLI peak memory: not measured: \(error.message)")
            return
        }
        defer { key.stop(quitLine: nil) }
        for arguments in [["--version"], ["info", "--device", "udp:127.0.0.1:\(port)?local=0", "--json"]] {
            let errorPath = "\(environment.logDirectory)/startup-time.log"
            do {
                let process = try SpawnedProcess(
                    executable: time,
                    arguments: ["-f", "%M", "-o", errorPath, environment.securityKeyBinary] + arguments,
                    environment: [:], errorPath: "/dev/null")
                process.closeInput()
                guard process.waitForExit(within: .seconds(30)) == 0,
                    let text = try? readSmallFile(errorPath),
                    let kilobytes = UInt64(text.split(separator: "\n").last.map(String.init) ?? "")
                else {
                    StandardStreams.out("CLI peak memory (\(arguments[0])): not measured (the run failed)")
                    continue
                }
                StandardStreams.out(
                    "CLI peak memory (VmHWM via GNU time), securitykey \(arguments[0]): "
                        + "\(Figures.fixed(Double(kilobytes) / 1024, decimals: 1)) MiB")
                if arguments[0] == "info" {
                    StandardStreams.out(
                        "target CLI peak memory (info) <= 12 MiB: "
                            + "\(Figures.fixed(Double(kilobytes) / 1024, decimals: 1)) MiB "
                            + (kilobytes <= Self.infoPeakTarget ? "met" : "MISSED"))
                }
            } catch {
                StandardStreams.out("CLI peak memory: not measured: \(error.message)")
            }
        }
    }

    private func readSmallFile(_ path: String) throws(BenchError) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw BenchError(.system, "Cannot open \(path) (errno \(errno)).") }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while bytes.count < 65536 {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A UDP socket on 127.0.0.1 that only waits for a datagram (the CLI start-up listener).
final class UDPListener {
    let fd: Int32
    let port: UInt16

    init() throws(BenchError) {
        (fd, port) = try BenchEnvironment.boundLoopbackUDPSocket()
    }

    /// Whether a datagram arrived within `milliseconds`.
    func waitForDatagram(milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0
        }
    }

    func close() { Glibc.close(fd) }
}
