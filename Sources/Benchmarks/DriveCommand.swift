import CBOR
import Logging

/// `securitykey-bench drive --device URI`: our host as a driver speaking the line protocol that
/// python-fido2's and libfido2's drivers speak (see Docs/Performance.md, "How it is measured").
///
/// After setup it prints `{"ready":true}`; then each line `OP COUNT` gets one JSON line back,
/// `{"op":OP,"latencies_ns":[...],"cpu_ns":N}` or `{"op":OP,"error":"..."}`; `quit` or end of
/// input ends it.
enum DriveCommand {
    static func run(uri: String) async -> Int32 {
        let logger = Logger(label: "securitykey.bench.drive")
        let driver: HostDriver
        do {
            driver = try await HostDriver.open(uri: uri, logger: logger)
        } catch {
            StandardStreams.out("{\"ready\":false,\"error\":\(JSONText.quoted(error.message))}")
            return 1
        }
        StandardStreams.out("{\"ready\":true}")
        for await line in StandardStreams.inputLines() {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            if words.isEmpty { continue }
            if words == ["quit"] { break }
            guard words.count == 2, let operation = BenchOperation(rawValue: String(words[0])),
                let count = Int(words[1]), count >= 0, count <= 1_000_000
            else {
                let name = words.first.map(String.init) ?? ""
                StandardStreams.out(
                    BatchResult(
                        operation: name, latencies: [], cpuNanoseconds: 0,
                        error: "Expected \"getinfo|mc|ga COUNT\" or \"quit\"."
                    ).jsonLine)
                continue
            }
            StandardStreams.out(await driver.batch(operation, count: count).jsonLine)
        }
        await driver.close()
        return 0
    }
}

/// `securitykey-bench --device URI --ops getinfo,mc,ga -n N [--json]`: our host alone against any
/// authenticator, per-operation median, p95 and CPU time per operation.
enum DeviceCommand {
    static func run(uri: String, operations: [BenchOperation], count: Int, json: Bool) async -> Int32 {
        let logger = Logger(label: "securitykey.bench.device")
        let driver: HostDriver
        do {
            driver = try await HostDriver.open(uri: uri, logger: logger)
        } catch {
            StandardStreams.err("securitykey-bench: \(error.message)")
            return 1
        }
        var results: [(BenchOperation, BatchResult)] = []
        for operation in operations {
            results.append((operation, await driver.batch(operation, count: count)))
        }
        await driver.close()
        var failed = false
        if json {
            var members: [String] = []
            for (operation, result) in results {
                if let error = result.error {
                    failed = true
                    members.append("{\"op\":\"\(operation.rawValue)\",\"error\":\(JSONText.quoted(error))}")
                } else if let summary = LatencySummary(result.latencies) {
                    let cpuPerOp = Double(result.cpuNanoseconds) / Double(summary.count)
                    members.append(
                        "{\"op\":\"\(operation.rawValue)\",\"n\":\(summary.count),"
                            + "\"median_ns\":\(Int(summary.median.rounded())),\"p95_ns\":\(Int(summary.p95)),"
                            + "\"cpu_ns_per_op\":\(Int(cpuPerOp.rounded()))}")
                }
            }
            StandardStreams.out(
                "{\"host\":\"securitykey\",\"device\":\(JSONText.quoted(uri)),\"results\":[\(members.joined(separator: ","))]}"
            )
        } else {
            StandardStreams.out("securitykey against \(uri), n=\(count) per operation")
            for (operation, result) in results {
                if let error = result.error {
                    failed = true
                    StandardStreams.out("\(Figures.pad(operation.rawValue, 8)) error: \(error)")
                } else if let summary = LatencySummary(result.latencies) {
                    let cpuPerOp = Double(result.cpuNanoseconds) / Double(summary.count)
                    StandardStreams.out(
                        "\(Figures.pad(operation.rawValue, 8)) median \(Figures.milliseconds(summary.median))"
                            + "  p95 \(Figures.milliseconds(summary.p95))  CPU/op \(Figures.milliseconds(cpuPerOp))"
                    )
                }
            }
        }
        return failed ? 1 : 0
    }
}
