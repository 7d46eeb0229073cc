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

    /// Releases the device.
    func close() async
}
