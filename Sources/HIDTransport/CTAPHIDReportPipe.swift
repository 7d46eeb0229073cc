import Transport

/// Moves raw CTAPHID reports to and from one device: a hidraw node, a UDP socket, or a test double.
///
/// ``CTAPHIDConnection`` is written once over this; implementations only move bytes.
public protocol CTAPHIDReportPipe: Sendable {
    /// The size of the device's reports in bytes (64 for full-speed USB; from the report descriptor).
    var reportSize: Int { get }

    /// Sends one report of exactly ``reportSize`` bytes (no report-ID prefix).
    func write(_ report: [UInt8]) async throws(TransportError)

    /// Waits at most `timeout` for one report; nil when none arrived in time. Implementations
    /// never block a cooperative thread and keep each wait bounded by `timeout`.
    func read(timeout: Duration) async throws(TransportError) -> [UInt8]?

    /// Sends `reports` in order. The default sends them one by one; pipes with an I/O thread
    /// send them all in one trip to it (a request is up to 129 reports).
    func write(reports: [[UInt8]]) async throws(TransportError)

    /// Waits at most `timeout` for a report, then takes the reports already waiting behind it,
    /// up to `limit` in all; empty when none arrived in time. The default reads one.
    func readAvailable(timeout: Duration, limit: Int) async throws(TransportError) -> [[UInt8]]

    /// Releases the device.
    func close() async
}

extension CTAPHIDReportPipe {
    /// Sends the reports one by one with ``write(_:)``.
    public func write(reports: [[UInt8]]) async throws(TransportError) {
        for report in reports { try await write(report) }
    }

    /// One report from ``read(timeout:)``, or none.
    public func readAvailable(timeout: Duration, limit: Int) async throws(TransportError) -> [[UInt8]] {
        guard limit > 0, let report = try await read(timeout: timeout) else { return [] }
        return [report]
    }
}

extension Duration {
    /// Whole milliseconds, at least 0, clamped to Int32 (for poll and hid_read_timeout).
    var clampedMilliseconds: Int32 {
        Int32(clamping: max(0, components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000))
    }
}
