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

    /// Sends `reports` (possibly none), then reads reports until `complete` (called with each,
    /// on the pipe's own thread where it has one) returns true, `limit` reports came, or
    /// `timeout` passed; returns the reports read, none when nothing arrived in time. Pipes with
    /// an I/O thread do all of it in one trip there, so a request and its whole reply cost one
    /// thread hop; the default uses ``write(reports:)`` and ``read(timeout:)``. It runs on the
    /// caller's executor (`nonisolated(nonsending)`), so a call from an actor does not hop to
    /// the global executor and back around the trip.
    nonisolated(nonsending) func transfer(
        sending reports: [[UInt8]], readingFor timeout: Duration, limit: Int,
        until complete: @escaping @Sendable ([UInt8]) -> Bool
    ) async throws(TransportError) -> [[UInt8]]

    /// ``transfer(sending:readingFor:limit:until:)`` for a caller that needs each report only
    /// while `accept` runs (called on the pipe's own thread where it has one): a pipe with a
    /// receive buffer hands the report over in place, with no array per report. Returns how
    /// many reports were read; the default goes through the array-returning transfer.
    nonisolated(nonsending) func transfer(
        sending reports: [[UInt8]], readingFor timeout: Duration, limit: Int,
        accepting accept: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool
    ) async throws(TransportError) -> Int

    /// Releases the device.
    func close() async

    /// The pipe's I/O thread as a task executor, when a caller may run on it (see
    /// ``AuthenticatorConnection/preferredTaskExecutor``); nil by default.
    var preferredTaskExecutor: (any TaskExecutor)? { get }
}

extension CTAPHIDReportPipe {
    /// Default: no thread to run on.
    public var preferredTaskExecutor: (any TaskExecutor)? { nil }

    /// Sends the reports one by one with ``write(_:)``.
    public func write(reports: [[UInt8]]) async throws(TransportError) {
        for report in reports { try await write(report) }
    }

    /// ``write(reports:)``, then reports from ``read(timeout:)`` until `complete` says so,
    /// `limit`, or `timeout`.
    nonisolated(nonsending) public func transfer(
        sending reports: [[UInt8]], readingFor timeout: Duration, limit: Int,
        until complete: @escaping @Sendable ([UInt8]) -> Bool
    ) async throws(TransportError) -> [[UInt8]] {
        if !reports.isEmpty { try await write(reports: reports) }
        let deadline = Deadline.after(timeout)
        var reports: [[UInt8]] = []
        while reports.count < limit, let report = try await read(timeout: deadline.remaining) {
            reports.append(report)
            if complete(report) { break }
        }
        return reports
    }
}

extension CTAPHIDReportPipe {
    /// ``transfer(sending:readingFor:limit:until:)``, each report handed to `accept` as bytes.
    nonisolated(nonsending) public func transfer(
        sending reports: [[UInt8]], readingFor timeout: Duration, limit: Int,
        accepting accept: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool
    ) async throws(TransportError) -> Int {
        try await transfer(
            sending: reports, readingFor: timeout, limit: limit,
            until: { report in report.withUnsafeBytes { accept($0) } }
        ).count
    }
}

extension Duration {
    /// ``wholeMilliseconds`` as the Int32 that poll and hid_read_timeout take.
    var clampedMilliseconds: Int32 { Int32(clamping: wholeMilliseconds) }
}
