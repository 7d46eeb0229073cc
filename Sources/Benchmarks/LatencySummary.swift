/// Median and 95th percentile of a list of latencies, and CPU time per operation.
struct LatencySummary: Sendable, Equatable {
    /// How many samples.
    var count: Int
    /// The median: the middle sample, or the mean of the two middle samples of an even count.
    var median: Double
    /// The 95th percentile by the nearest-rank method: the ⌈0.95·n⌉-th smallest sample.
    var p95: Double

    /// Summarises `samples`; nil when there are none.
    init?(_ samples: [UInt64]) {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        let n = sorted.count
        count = n
        median = n % 2 == 1 ? Double(sorted[n / 2]) : (Double(sorted[n / 2 - 1]) + Double(sorted[n / 2])) / 2
        // ⌈0.95·n⌉ in integers: (95·n + 99) / 100, a 1-based rank.
        let rank = (95 * n + 99) / 100
        p95 = Double(sorted[max(rank, 1) - 1])
    }
}

/// Number formatting shared by the tables.
enum Figures {
    /// Nanoseconds as milliseconds with three decimals: `1.234 ms`.
    static func milliseconds(_ nanoseconds: Double) -> String {
        "\(fixed(nanoseconds / 1_000_000, decimals: 3)) ms"
    }

    /// `value` rounded to `decimals` places, without Foundation's locale-dependent formatting.
    static func fixed(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "n/a" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9e18 else { return value < 0 ? "-inf" : "inf" }
        let units = Int(scaled)
        let whole = units / Int(scale)
        var fraction = String(units % Int(scale))
        while fraction.count < decimals { fraction = "0" + fraction }
        let sign = value < 0 && units != 0 ? "-" : ""
        return decimals == 0 ? "\(sign)\(whole)" : "\(sign)\(whole).\(fraction)"
    }

    /// Pads `text` on the right to `width` characters.
    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
