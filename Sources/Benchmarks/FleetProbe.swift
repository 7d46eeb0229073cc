#if canImport(Glibc)
    import Glibc
#endif
import Authenticators
import CBOR
import HIDTransport
import Logging
import NFCTransport
import Transport

/// `securitykey-bench fleet-probe --repeat R [--warmup W] (--pcsc | URI...)`: our host's side of
/// the fleet benchmark, as a process of its own like python-fido2's (scripts/bench/fido2_fleet.py)
/// and libfido2's (`fido2-udp-driver --fleet`), so that the orchestrator reads every host's peak
/// memory the same way (`wait4`) and none shares a process with the orchestrator.
///
/// Each round opens every key (CTAPHID_INIT, or the card's SELECT) and runs getInfo on it, all at
/// once, through the device layer's directory (the one `securitykey fleet` and the daemon use).
/// After W rounds (default 3) it prints `{"warm":true}`, measures R rounds and prints
/// `{"times_ns":[R],"found":[R],"cpu_ns":N}`, or `{"error":"..."}`; then it waits for a line or the
/// end of its input before it exits, so that the orchestrator can read its peak memory.
enum FleetProbeCommand {
    /// The most keys one probe takes.
    static let maximumKeys = 1024
    /// How long one round may take before the keys that have not answered are not found.
    static let roundDeadline: Duration = .seconds(10)

    static func run(_ arguments: [String]) async -> Int32 {
        var repeatCount = 0
        var warmup = 3
        var pcsc = false
        var uris: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let next = index + 1 < arguments.count ? arguments[index + 1] : nil
            switch argument {
            case "--repeat":
                guard let next, let value = Int(next), value > 0, value <= 10_000 else { return usage() }
                repeatCount = value
                index += 1
            case "--warmup":
                guard let next, let value = Int(next), value >= 0, value <= 10_000 else { return usage() }
                warmup = value
                index += 1
            case "--pcsc":
                pcsc = true
            default:
                guard argument.hasPrefix("udp:") else { return usage() }
                // Each key gets an ephemeral local port, as the other hosts' sockets do.
                uris.append(argument.contains("?") ? argument : argument + "?local=0")
            }
            index += 1
        }
        guard repeatCount > 0, pcsc == uris.isEmpty, uris.count <= maximumKeys else { return usage() }
        let logger = Logger(label: "securitykey.bench.fleet-probe")
        var endpoints: [UDPEndpoint] = []
        for uri in uris {
            do throws(TransportError) { endpoints.append(try UDPEndpoint(uri: uri)) } catch {
                StandardStreams.out("{\"error\":\(JSONText.quoted(error.message))}")
                return 1
            }
        }
        let once: () async -> Int = {
            pcsc ? await probePCSC(logger: logger) : await probeUDP(endpoints, logger: logger)
        }
        for _ in 0..<warmup { _ = await once() }
        StandardStreams.out("{\"warm\":true}")
        var times: [UInt64] = []
        var found: [Int] = []
        let clock = ContinuousClock()
        let cpuStart = ProcessCPUClock.nanoseconds()
        for _ in 0..<repeatCount {
            let start = clock.now
            found.append(await once())
            times.append(start.duration(to: clock.now).nanoseconds)
        }
        let cpu = ProcessCPUClock.nanoseconds() &- cpuStart
        StandardStreams.out(
            "{\"times_ns\":[\(times.map(String.init).joined(separator: ","))],"
                + "\"found\":[\(found.map(String.init).joined(separator: ","))],\"cpu_ns\":\(cpu)}")
        for await _ in StandardStreams.inputLines() { break }
        return 0
    }

    private static func usage() -> Int32 {
        StandardStreams.err(
            "securitykey-bench: fleet-probe takes --repeat R [--warmup W] (--pcsc | udp:HOST:PORT...)")
        return 2
    }

    /// Opens every endpoint and runs getInfo, all at once; how many answered.
    static func probeUDP(_ endpoints: [UDPEndpoint], logger: Logger) async -> Int {
        let directory = AuthenticatorDirectory(discoveries: [
            UDPDiscovery(endpoints: endpoints, logger: logger)
        ])
        let opened = await directory.open(uris: endpoints.map(\.uri), deadline: .after(roundDeadline))
        // Every key is closed, all at once as they were opened (python-fido2's threads each close
        // their own key too); one after the other would queue K trips to the I/O thread.
        return await withTaskGroup(of: Int.self) { group in
            for case .success(let key) in opened {
                group.addTask {
                    await key.close()
                    return 1
                }
            }
            return await group.reduce(0, +)
        }
    }

    /// Lists the PC/SC readers, then opens the card in each and runs getInfo, all at once; how
    /// many answered.
    static func probePCSC(logger: Logger) async -> Int {
        let directory = AuthenticatorDirectory(discoveries: [PCSCDiscovery(logger: logger)])
        return await directory.list(deadline: .after(roundDeadline)).filter { $0.info != nil }.count
    }
}
