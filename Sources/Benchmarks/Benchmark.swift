/// One named group of figures; `securitykey-bench <name>` runs only that group.
struct BenchmarkSection: Sendable {
    /// The name given on the command line, e.g. `cbor`.
    var name: String
    /// What the section measures, for `--list`.
    var summary: String
    /// Prints the section's figures, one per line.
    var run: @Sendable () -> Void
}

enum Benchmark {
    /// How long each figure is measured for, after a warm-up of a tenth of that.
    static let measureSeconds = 0.5

    /// Runs `body` (which processes `bytes` bytes per call) repeatedly and prints its
    /// throughput as one line: `<label> (<bytes> B): <MB/s> MB/s`.
    static func throughput(_ label: String, bytes: Int, _ body: () -> Int) {
        var sink = 0
        let clock = ContinuousClock()
        let warmUpEnd = clock.now.advanced(by: .seconds(measureSeconds / 10))
        while clock.now < warmUpEnd { sink &+= body() }

        var iterations = 0
        var batch = 1
        let start = clock.now
        var elapsed = Duration.zero
        while elapsed < .seconds(measureSeconds) {
            for _ in 0..<batch { sink &+= body() }
            iterations += batch
            batch = min(batch * 2, 4096)
            elapsed = start.duration(to: clock.now)
        }
        blackHole(sink)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let megabytesPerSecond = Double(bytes) * Double(iterations) / seconds / 1_000_000
        StandardStreams.out("\(label) (\(bytes) B): \(format(megabytesPerSecond)) MB/s")
    }

    static func format(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    /// Keeps the optimizer from discarding the measured work.
    @inline(never) @_optimize(none)
    static func blackHole(_ value: Int) {}
}
