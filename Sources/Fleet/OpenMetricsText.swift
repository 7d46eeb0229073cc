/// Text in the exposition format Prometheus scrapes, written so that it is also OpenMetrics 1.0
/// text: gauges only (the two formats name counters differently), `# HELP` and `# TYPE` before
/// each family's samples, no timestamps (node-exporter's textfile collector refuses them), and
/// `# EOF` at the end (a comment to Prometheus' text parser, the end marker to OpenMetrics').
public struct OpenMetricsText: Sendable {
    /// One sample: its labels (name, value) in order, and its value.
    public struct Sample: Sendable {
        /// The labels, in the order written; empty values are left out (Prometheus treats an
        /// empty label as an absent one).
        public var labels: [(String, String)]
        /// The value.
        public var value: Double

        /// A sample of `value` with `labels`.
        public init(_ labels: [(String, String)], _ value: Double) {
            self.labels = labels
            self.value = value
        }
    }

    /// The text so far.
    public private(set) var text = ""

    /// Empty text.
    public init() {}

    /// Appends the gauge family `name` with its help text and samples (its HELP and TYPE lines
    /// even without samples, so the family's meaning is always there).
    public mutating func gauge(_ name: String, help: String, _ samples: [Sample]) {
        text += "# HELP \(name) \(Self.escapeHelp(help))\n"
        text += "# TYPE \(name) gauge\n"
        for sample in samples {
            let labels = sample.labels.filter { !$0.1.isEmpty }
            let rendered =
                labels.isEmpty
                ? ""
                : "{" + labels.map { "\($0.0)=\"\(Self.escapeLabelValue($0.1))\"" }.joined(separator: ",")
                    + "}"
            text += "\(name)\(rendered) \(Self.format(sample.value))\n"
        }
    }

    /// The text with its `# EOF` line.
    public var finished: String { text + "# EOF\n" }

    /// A label value escaped as both formats read it: backslash, double quote and line feed
    /// (OpenMetrics 1.0 "ABNF": `\\`, `\"`, `\n`).
    public static func escapeLabelValue(_ value: String) -> String { escaped(value, quote: "\\\"") }

    /// Help text escaped as both formats read it: backslash and line feed (a double quote,
    /// which OpenMetrics escapes and Prometheus' parser refuses escaped, becomes a single quote).
    static func escapeHelp(_ help: String) -> String { escaped(help, quote: "'") }

    /// `text` with backslash and line feed escaped and each double quote replaced by `quote`.
    private static func escaped(_ text: String, quote: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\"": out += quote
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A value as both formats write it: integers without a fraction, `NaN`, `+Inf`, `-Inf`.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
