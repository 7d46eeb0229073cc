import CTAPHID

/// CTAPHID framing throughput: splitting a message into 64-byte reports and reassembling them.
enum CTAPHIDBenchmarks {
    static let section = BenchmarkSection(
        name: "ctaphid", summary: "CTAPHID segment/reassemble of a 1 KB and a 7609-byte (largest) message",
        run: run)

    static let channel: UInt32 = 0x1234_5678

    static func run() {
        let reportSize = CTAPHIDMessage.defaultReportSize
        let sizes = [1024, CTAPHIDMessage.maxPayloadSize(reportSize: reportSize)]
        for size in sizes {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let message = CTAPHIDMessage(channel: channel, command: .cbor, payload: payload)
            guard let reports = try? message.reports(reportSize: reportSize),
                reassemble(reports, reportSize: reportSize) == message
            else {
                StandardStreams.out("ctaphid \(size) B: the message does not round-trip; not measured")
                continue
            }
            Benchmark.throughput("ctaphid segment \(reports.count) reports", bytes: size) {
                (try? message.reports(reportSize: reportSize))?.count ?? 0
            }
            Benchmark.throughput("ctaphid reassemble \(reports.count) reports", bytes: size) {
                reassemble(reports, reportSize: reportSize)?.payload.count ?? 0
            }
        }
    }

    static func reassemble(_ reports: [[UInt8]], reportSize: Int) -> CTAPHIDMessage? {
        var assembler = CTAPHIDMessageAssembler(channel: channel, reportSize: reportSize)
        for report in reports {
            guard let step = try? assembler.append(report) else { return nil }
            if case .complete(let message) = step { return message }
        }
        return nil
    }
}
