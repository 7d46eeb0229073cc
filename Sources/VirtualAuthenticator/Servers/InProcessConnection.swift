import _SecurityKeyInternals
import Transport

/// A connection to a ``CTAPMessageHandler`` (usually a ``VirtualKey``) in the same process:
/// the host side's round trip without any wire. It honours the deadline (the request is
/// cancelled and ``TransportError/Code/timeout`` thrown) and task cancellation
/// (``TransportError/Code/cancelled``), as the hardware transports do.
public actor InProcessConnection: AuthenticatorConnection {
    /// Describes the in-process device.
    public nonisolated let descriptor: DeviceDescriptor
    /// CTAP2 and U2F are both carried; winking is recorded by the handler.
    public nonisolated let capabilities: TransportCapabilities = [.cbor, .wink]

    private let handler: any CTAPMessageHandler
    private var isClosed = false
    /// Ends the transactions in flight when the connection is closed, as an unplugged
    /// device's pending read would.
    private var inFlight: [Int: AsyncStream<Never>.Continuation] = [:]
    private var nextTransaction = 0

    /// Connects to `handler`, described by `uri` (for listings and logs).
    public init(handler: any CTAPMessageHandler, uri: String = "inprocess:virtual-key") {
        self.handler = handler
        self.descriptor = DeviceDescriptor(
            uri: uri, transport: .inProcess, manufacturer: "securitykey", product: "Virtual Authenticator")
    }

    private enum Outcome: Sendable {
        case reply([UInt8])
        case deadline
        case closed
    }

    /// Hands `payload` to the handler and returns its reply (see ``AuthenticatorConnection``).
    public func transact(
        _ command: TransportCommand,
        payload: [UInt8],
        deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        guard !isClosed else { throw TransportError(.closed, "The in-process connection is closed.") }
        guard command == .cbor || command == .u2f else {
            throw TransportError(
                .notSupported, "The in-process connection carries only CTAP2 and U2F messages.")
        }
        if Task.isCancelled { throw TransportError(.cancelled, "The request was cancelled.") }
        let handler = self.handler
        let (closing, closeSignal) = AsyncStream<Never>.makeStream()
        let id = nextTransaction
        nextTransaction += 1
        inFlight[id] = closeSignal
        defer { inFlight[id] = nil }
        let outcome = await withTaskGroup(of: Outcome.self, returning: Outcome.self) { group in
            group.addTask {
                if command == .u2f { return .reply(await handler.handleU2F(payload)) }
                return .reply(await handler.handleCBOR(payload, keepalive: keepalive))
            }
            group.addTask {
                // Ends early, without a reply, only when the whole request is cancelled. In slices:
                // one Task.sleep kept ~1 KiB per transaction until the deadline (CancellableSleep).
                try? await CancellableSleep.sleep(until: deadline.instant)
                return .deadline
            }
            group.addTask {
                // Ends when the connection is closed (or the transaction is over).
                for await _ in closing {}
                return .closed
            }
            var result = Outcome.deadline
            if let first = await group.next() { result = first }
            // The handler sees cancellation and answers CTAP2_ERR_KEEPALIVE_CANCEL promptly.
            group.cancelAll()
            while await group.next() != nil {}
            return result
        }
        if Task.isCancelled { throw TransportError(.cancelled, "The request was cancelled.") }
        switch outcome {
        case .reply(let reply): return reply
        case .deadline: throw TransportError(.timeout, "The virtual key did not answer before the deadline.")
        case .closed: throw TransportError(.closed, "The in-process connection was closed during the request.")
        }
    }

    /// Asks the handler to wink.
    public func wink() async throws(TransportError) {
        guard !isClosed else { throw TransportError(.closed, "The in-process connection is closed.") }
        await handler.wink()
    }

    /// Closes the connection; later calls throw ``TransportError/Code/closed``.
    public func close() async {
        isClosed = true
        for signal in inFlight.values { signal.finish() }
        inFlight.removeAll()
    }
}
