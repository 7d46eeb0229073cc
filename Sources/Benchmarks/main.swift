// securitykey-bench: throughput figures, one per line. Tests never assert on timings; this does.
//
//   securitykey-bench            run every section
//   securitykey-bench cbor ...   run the named sections
//   securitykey-bench --list     list the sections

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let sections: [BenchmarkSection] = [
    CBORBenchmarks.section
]

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments == ["--list"] {
    for section in sections { print("\(section.name)\t\(section.summary)") }
} else {
    let unknown = arguments.filter { name in !sections.contains { $0.name == name } }
    if !unknown.isEmpty {
        let message = "securitykey-bench: unknown section \(unknown.joined(separator: ", ")); see --list\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }
    for section in sections where arguments.isEmpty || arguments.contains(section.name) {
        section.run()
    }
}
