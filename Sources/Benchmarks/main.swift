// securitykey-bench: performance figures. Tests never assert on timings; this prints them.
//
//   securitykey-bench [-n N] [--rounds R] [--fleet 1,8,32,128] [--transport udp|pcsc] [SECTION...]
//                                  run the named sections (default: all, in the order of --list)
//   securitykey-bench --list       list the sections
//   securitykey-bench fleet-probe --repeat R [--warmup W] (--pcsc | URI...)
//                                  our host's side of the fleet benchmark (FleetProbe.swift)
//   securitykey-bench soak [--ceremonies N] [--samples S]
//                                  N ceremonies in-process on one virtual key, RSS and fds sampled
//                                  (LoadSoak.swift; make bench-load)
//   securitykey-bench drive --device URI
//                                  our host as a driver of the line protocol (Docs/Performance.md)
//   securitykey-bench --device URI [--ops getinfo,mc,ga] [-n N] [--json]
//                                  our host alone against any authenticator
//   securitykey-bench stats VALUE...
//                                  median and p95 of the values (what the tables use)

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@MainActor
enum BenchMain {
    static let microSections: [BenchmarkSection] = [
        CBORBenchmarks.section, CTAPHIDBenchmarks.section, ThreadHopBenchmarks.section,
    ]
    static let systemSections: [(name: String, summary: String)] = [
        (
            "hosts",
            "getInfo/makeCredential/getAssertion: ours vs python-fido2 vs libfido2 on a virtual key (UDP, PC/SC)"
        ),
        (
            "startup",
            "securitykey CLI: exec to first UDP datagram, --version to exit, peak memory"
        ),
        (
            "fleet",
            "open + getInfo on K virtual keys of one process (UDP; PC/SC): ours vs python-fido2 vs libfido2"
        ),
    ]

    static func usage(_ message: String) -> Int32 {
        StandardStreams.err(
            "securitykey-bench: \(message) (see the comment at the top of main.swift or --list)")
        return 2
    }

    static func run(_ arguments: [String]) async -> Int32 {
        if arguments == ["--list"] {
            for section in microSections { StandardStreams.out("\(section.name)\t\(section.summary)") }
            for section in systemSections { StandardStreams.out("\(section.name)\t\(section.summary)") }
            return 0
        }
        if arguments.first == "stats" {
            let values = arguments.dropFirst().compactMap { UInt64($0) }
            guard values.count == arguments.count - 1, let summary = LatencySummary(values) else {
                return usage("stats takes one or more non-negative integers")
            }
            StandardStreams.out(
                "{\"n\":\(summary.count),\"median\":\(Figures.fixed(summary.median, decimals: 1)),"
                    + "\"p95\":\(Figures.fixed(summary.p95, decimals: 1))}")
            return 0
        }
        if arguments.first == "fleet-probe" {
            return await FleetProbeCommand.run(Array(arguments.dropFirst()))
        }
        if arguments.first == "soak" {
            return await SoakCommand.run(Array(arguments.dropFirst()))
        }
        if arguments.first == "drive" {
            guard arguments.count == 3, arguments[1] == "--device" else {
                return usage("drive takes --device URI")
            }
            return await DriveCommand.run(uri: arguments[2])
        }

        var count = 1000
        var rounds = 10
        var fleetSizes = [1, 8, 32, 128]
        var device: String?
        var operations = BenchOperation.allCases
        var json = false
        var transports = ["udp", "pcsc"]
        var sections: [String] = []
        var index = 0
        func value() -> String? {
            index += 1
            return index < arguments.count ? arguments[index] : nil
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "-n":
                guard let text = value(), let parsed = Int(text), parsed > 0, parsed <= 1_000_000 else {
                    return usage("-n takes a count from 1 to 1000000")
                }
                count = parsed
            case "--rounds":
                guard let text = value(), let parsed = Int(text), parsed > 0, parsed <= 1000 else {
                    return usage("--rounds takes a count from 1 to 1000")
                }
                rounds = parsed
            case "--fleet":
                guard let text = value() else { return usage("--fleet takes sizes such as 1,8,32") }
                let sizes = text.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 && $0 <= 256 }
                guard !sizes.isEmpty, sizes.count == text.split(separator: ",").count else {
                    return usage("--fleet takes sizes from 1 to 256 such as 1,8,32")
                }
                fleetSizes = sizes
            case "--device":
                guard let text = value() else { return usage("--device takes a URI") }
                device = text
            case "--ops":
                guard let text = value() else { return usage("--ops takes getinfo,mc,ga") }
                let parsed = text.split(separator: ",").compactMap { BenchOperation(rawValue: String($0)) }
                guard !parsed.isEmpty, parsed.count == text.split(separator: ",").count else {
                    return usage("--ops takes a comma-separated list of getinfo, mc and ga")
                }
                operations = parsed
            case "--transport":
                guard let text = value(), ["udp", "pcsc"].contains(text) else {
                    return usage("--transport takes udp or pcsc")
                }
                transports = [text]
            case "--json":
                json = true
            default:
                guard !argument.hasPrefix("-") else { return usage("unknown option \(argument)") }
                sections.append(argument)
            }
            index += 1
        }

        if let device {
            guard sections.isEmpty else { return usage("--device runs only our host; name no sections") }
            return await DeviceCommand.run(uri: device, operations: operations, count: count, json: json)
        }
        let known = microSections.map(\.name) + systemSections.map(\.name)
        let unknown = sections.filter { !known.contains($0) }
        guard unknown.isEmpty else { return usage("unknown section \(unknown.joined(separator: ", "))") }
        let selected = sections.isEmpty ? known : known.filter { sections.contains($0) }

        for section in microSections where selected.contains(section.name) {
            section.run()
        }
        guard selected.contains("hosts") || selected.contains("fleet") || selected.contains("startup") else {
            return 0
        }
        InterruptCleanup.install()
        let environment: BenchEnvironment
        do { environment = try BenchEnvironment.discover() } catch {
            StandardStreams.err("securitykey-bench: \(error.message)")
            return 1
        }
        if selected.contains("hosts") {
            let comparison = HostComparison(
                environment: environment, count: count, rounds: min(rounds, count))
            if transports.contains("udp") { comparison.runUDP() }
            if transports.contains("pcsc") { comparison.runPCSC() }
        }
        if selected.contains("startup") {
            CLIStartup(environment: environment, runs: 50).run()
        }
        if selected.contains("fleet") {
            let fleet = Fleet(environment: environment, repetitions: 20)
            if transports.contains("udp") { fleet.runUDP(sizes: fleetSizes) }
            if transports.contains("pcsc") { fleet.runPCSC(sizes: fleetSizes) }
        }
        return 0
    }
}

signal(SIGPIPE, SIG_IGN)
exit(await BenchMain.run(Array(CommandLine.arguments.dropFirst())))
