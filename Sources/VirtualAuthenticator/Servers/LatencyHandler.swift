import Transport

/// A ``CTAPMessageHandler`` that answers CTAP2 (CBOR) and CTAP1 (MSG) requests no earlier than
/// ``latency`` after they arrived, modelling a real key's own processing time.
///
/// Only the commands a key's firmware works on are slowed: CTAPHID_INIT, PING and CANCEL are
/// answered by the transport layer as a real key's HID stack answers them, at once, and WINK
/// only blinks. The wait is a task sleep, not a busy loop, so a process serving many slow keys
/// costs almost no CPU while they "work"; the host's parallelism is what a benchmark measures.
/// A cancelled request (CTAPHID_CANCEL) stops waiting and answers as the wrapped key does.
public struct LatencyHandler: CTAPMessageHandler {
    /// The key that does the work.
    public let base: any CTAPMessageHandler
    /// The least time between a request's arrival and its answer.
    public let latency: Duration

    /// Wraps `base` so that its CBOR and MSG answers take at least `latency`.
    public init(_ base: any CTAPMessageHandler, latency: Duration) {
        self.base = base
        self.latency = latency
    }

    /// Runs `base`, then sleeps for what is left of ``latency``.
    public func handleCBOR(
        _ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async -> [UInt8] {
        let start = ContinuousClock.now
        let reply = await base.handleCBOR(message, keepalive: keepalive)
        await waitOut(from: start)
        return reply
    }

    /// Runs `base`, then sleeps for what is left of ``latency``.
    public func handleU2F(_ apdu: [UInt8]) async -> [UInt8] {
        let start = ContinuousClock.now
        let reply = await base.handleU2F(apdu)
        await waitOut(from: start)
        return reply
    }

    /// Passed through: a power cycle is not a command.
    public func powerCycle() async { await base.powerCycle() }

    /// Passed through at once: a wink only blinks.
    public func wink() async { await base.wink() }

    private func waitOut(from start: ContinuousClock.Instant) async {
        // A cancelled sleep throws; the request is then answered at once, as cancelled ones are.
        try? await Task.sleep(until: start + latency, clock: .continuous)
    }
}
