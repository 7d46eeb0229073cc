import _SecurityKeyInternals
import CTAPHID
import Logging
import Synchronization
import Transport

/// A host-side CTAPHID connection to one device over any ``CTAPHIDReportPipe`` (CTAP 2.1 §11.2).
///
/// One transaction runs at a time. Every wait is bounded by the caller's deadline and read in
/// short slices, so cancellation is seen quickly; cancelling sends CTAPHID_CANCEL. After any
/// failure the next transaction drains stale reports and re-initialises the channel first.
public actor CTAPHIDConnection: AuthenticatorConnection {
    /// What this connection talks to.
    public nonisolated let descriptor: DeviceDescriptor
    /// The device's abilities, from its CTAPHID_INIT response.
    public nonisolated let capabilities: TransportCapabilities
    /// The device's CTAPHID_INIT response when the connection was opened (versions, capabilities).
    public nonisolated let deviceInfo: CTAPHIDInitResponse

    /// How long one read waits before the connection checks for cancellation and the deadline.
    public static let readSlice: Duration = .milliseconds(100)
    /// How long ``open(pipe:descriptor:timeout:logger:)`` waits for the INIT answer by default.
    public static let defaultOpenTimeout: Duration = .seconds(3)

    private let pipe: any CTAPHIDReportPipe
    private let logger: Logger
    private var channel: UInt32
    private var needsResync = false
    private var closed = false
    private var inTransaction = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    private init(
        pipe: any CTAPHIDReportPipe, descriptor: DeviceDescriptor, info: CTAPHIDInitResponse, logger: Logger
    ) {
        self.pipe = pipe
        self.descriptor = descriptor
        self.deviceInfo = info
        self.channel = info.channel
        self.capabilities = TransportCapabilities(rawValue: info.capabilities.rawValue)
        self.logger = logger
    }

    /// Allocates a channel with CTAPHID_INIT on the broadcast channel and returns the connection.
    /// On failure the pipe is closed.
    public static func open(
        pipe: any CTAPHIDReportPipe, descriptor: DeviceDescriptor, timeout: Duration = defaultOpenTimeout,
        logger: Logger = Logger(label: "securitykey.hid")
    ) async throws(TransportError) -> CTAPHIDConnection {
        do {
            let info = try await initialize(
                pipe: pipe, channel: CTAPHIDMessage.broadcastChannel, deadline: .after(timeout), logger: logger
            )
            logger.debug(
                "CTAPHID channel allocated",
                metadata: ["uri": "\(descriptor.uri)", "cid": "\(Hex.encode(info.channel))"])
            return CTAPHIDConnection(pipe: pipe, descriptor: descriptor, info: info, logger: logger)
        } catch {
            await pipe.close()
            throw error
        }
    }

    // MARK: AuthenticatorConnection

    /// Sends a CTAPHID_CBOR or CTAPHID_MSG request and returns the reply payload.
    public func transact(
        _ command: TransportCommand, payload: [UInt8], deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        let hidCommand: CTAPHIDCommand
        switch command {
        case .cbor:
            guard capabilities.contains(.cbor) else {
                throw TransportError(
                    .notSupported, "This security key does not speak CTAP2 (no CTAPHID CBOR capability).")
            }
            hidCommand = .cbor
        case .u2f:
            guard !capabilities.contains(.noU2F) else {
                throw TransportError(
                    .notSupported, "This security key does not speak CTAP1/U2F (CTAPHID NMSG capability).")
            }
            hidCommand = .msg
        default:
            throw TransportError(.notSupported, "CTAPHID cannot carry \(command) messages.")
        }
        return try await transaction(hidCommand, payload: payload, deadline: deadline, keepalive: keepalive)
    }

    /// Sends CTAPHID_WINK (CTAP 2.1 §11.2.9.2.1).
    public func wink() async throws(TransportError) {
        guard capabilities.contains(.wink) else {
            throw TransportError(.notSupported, "This security key cannot blink on request.")
        }
        _ = try await transaction(.wink, payload: [], deadline: .after(.seconds(5)), keepalive: { _ in })
    }

    /// Sends CTAPHID_PING and returns the echoed bytes (CTAP 2.1 §11.2.9.1.4).
    public func ping(_ data: [UInt8], timeout: Duration = .seconds(5)) async throws(TransportError) -> [UInt8]
    {
        try await transaction(.ping, payload: data, deadline: .after(timeout), keepalive: { _ in })
    }

    /// Sends CTAPHID_LOCK for `seconds` (0 releases, at most 10) (CTAP 2.1 §11.2.9.2.2).
    public func lock(seconds: UInt8, timeout: Duration = .seconds(5)) async throws(TransportError) {
        _ = try await transaction(.lock, payload: [seconds], deadline: .after(timeout), keepalive: { _ in })
    }

    /// True: transactions wait their turn here, in call order.
    public nonisolated var serializesTransactions: Bool { true }

    /// The pipe's I/O thread, where a caller may run its operations (see the protocol's note).
    public nonisolated var preferredTaskExecutor: (any TaskExecutor)? { pipe.preferredTaskExecutor }

    /// Closes the pipe; later calls fail with ``TransportError/Code/closed``.
    public func close() async {
        guard !closed else { return }
        closed = true
        await pipe.close()
    }

    // MARK: Transactions

    private func acquire() async {
        while inTransaction {
            await withCheckedContinuation { waiters.append($0) }
        }
        inTransaction = true
    }

    private func release() {
        inTransaction = false
        if !waiters.isEmpty { waiters.removeFirst().resume() }
    }

    private func transaction(
        _ command: CTAPHIDCommand, payload: [UInt8], deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        // The free case without a call to an async function (a frame and an executor check).
        if inTransaction { await acquire() } else { inTransaction = true }
        defer { release() }
        guard !closed else { throw TransportError(.closed, "The security key connection was closed.") }
        guard !Task.isCancelled else { throw TransportError(.cancelled, "The operation was cancelled.") }
        let request = CTAPHIDMessage(channel: channel, command: command, payload: payload)
        let reports: [[UInt8]]
        do {
            reports = try request.reports(reportSize: pipe.reportSize)
        } catch {
            throw TransportError(.messageTooLarge, error.message, underlying: error)
        }
        if needsResync {
            try await resynchronize(deadline: deadline)
        }
        do {
            let reply = try await exchange(
                command, reports: reports, deadline: deadline, keepalive: keepalive)
            return reply
        } catch {
            if error.code != .deviceError {
                needsResync = true
            }
            if error.code == .cancelled || error.code == .timeout {
                // Tell the device to stop waiting for a touch nobody will give.
                await sendCancel()
            }
            throw error
        }
    }

    /// Drops reports left over from a failed transaction and re-sends INIT on the channel.
    private func resynchronize(deadline: Deadline) async throws(TransportError) {
        var drained = 0
        while drained < 64, !deadline.hasPassed, (try await pipe.read(timeout: .zero)) != nil {
            drained += 1
        }
        let info = try await Self.initialize(pipe: pipe, channel: channel, deadline: deadline, logger: logger)
        channel = info.channel
        needsResync = false
        logger.info(
            "CTAPHID channel re-initialised", metadata: ["uri": "\(descriptor.uri)", "dropped": "\(drained)"])
    }

    private func sendCancel() async {
        let cancel = CTAPHIDMessage(channel: channel, command: .cancel, payload: [])
        guard let report = try? cancel.reports(reportSize: pipe.reportSize).first else { return }
        do {
            try await pipe.write(report)
            logger.debug("CTAPHID_CANCEL sent", metadata: ["uri": "\(descriptor.uri)"])
        } catch {
            logger.debug("CTAPHID_CANCEL could not be sent", metadata: ["error": "\(error)"])
        }
    }

    private func exchange(
        _ command: CTAPHIDCommand, reports: [[UInt8]], deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        var backoff: Duration = .milliseconds(10)
        var sawBusy = false
        logger.debug("CTAPHID request", metadata: ["command": "\(command)", "uri": "\(descriptor.uri)"])
        // Asked once: each `trace` call asks the log handler for its level again.
        let tracing = logger.logLevel <= .trace
        while true {
            try Self.checkCancellation()
            if tracing {
                for report in reports { logger.trace("CTAPHID out", metadata: ["report": "\(Hex.encode(report))"]) }
            }
            let reply: CTAPHIDMessage
            do {
                reply = try await Self.receive(
                    pipe: pipe, sending: reports, channel: channel, deadline: deadline, logger: logger,
                    keepalive: keepalive)
            } catch {
                // A device that kept answering busy until the deadline was busy, not silent.
                throw sawBusy && error.code == .timeout ? Self.stayedBusy : error
            }
            switch reply.command {
            case command:
                return reply.payload
            case .error:
                guard let byte = reply.payload.first else {
                    throw TransportError(.malformedResponse, "The security key sent an empty CTAPHID error.")
                }
                let code = CTAPHIDErrorCode(rawValue: byte)
                guard code == .channelBusy else { throw Self.deviceError(code) }
                if !sawBusy {
                    // Said once, at a level the CLI shows by default: the user should know why
                    // nothing happens (another program holds the key), not only when it fails.
                    logger.warning(
                        "The security key is busy with another application; waiting for it.",
                        metadata: ["uri": "\(descriptor.uri)"])
                }
                sawBusy = true
                try await Self.backOff(&backoff, deadline: deadline, logger: logger)
            default:
                throw TransportError(
                    .malformedResponse, "The security key answered \(command) with \(reply.command).")
            }
        }
    }

    private static func deviceError(_ code: CTAPHIDErrorCode) -> TransportError {
        let error = CTAPHIDError.device(code)
        return TransportError(.deviceError, error.message, underlying: error)
    }

    private static let stayedBusy = TransportError(
        .busy, "The security key stayed busy with another application until the deadline.")

    private static func checkCancellation() throws(TransportError) {
        if Task.isCancelled { throw TransportError(.cancelled, "The operation was cancelled.") }
    }

    /// Waits before retrying after ERR_CHANNEL_BUSY, doubling up to 500 ms, within the deadline.
    private static func backOff(
        _ backoff: inout Duration, deadline: Deadline, logger: Logger
    ) async throws(TransportError) {
        let remaining = deadline.remaining
        guard remaining > backoff else { throw stayedBusy }
        logger.debug("CTAPHID channel busy, retrying", metadata: ["after": "\(backoff)"])
        do {
            try await Task.sleep(for: backoff)
        } catch {
            throw TransportError(.cancelled, "The operation was cancelled.")
        }
        backoff = min(backoff * 2, .milliseconds(500))
    }

    /// Sends `request`, then reads one complete message for `channel`, surfacing keepalives,
    /// until `deadline`. On the caller's executor (the connection's), like the pipe's transfer.
    nonisolated(nonsending) private static func receive(
        pipe: any CTAPHIDReportPipe, sending request: [[UInt8]], channel: UInt32,
        deadline: Deadline, logger: Logger, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> CTAPHIDMessage {
        let receiver = CTAPHIDReceiver(channel: channel, reportSize: pipe.reportSize)
        let tracing = logger.logLevel <= .trace
        var unsent = request
        while true {
            try checkCancellation()
            let remaining = deadline.remaining
            guard remaining > .zero else {
                throw TransportError(.timeout, "The security key did not answer in time.")
            }
            // The reports are assembled as they arrive, on the pipe's thread where it has one, so
            // a whole message comes back in one trip.
            // Each report is handed over where the pipe received it and logged there when tracing.
            _ = try await pipe.transfer(
                sending: unsent, readingFor: min(readSlice, remaining), limit: Int(CTAPHIDPacket.maxSequence) + 2,
                accepting: { report in
                    if tracing { logger.trace("CTAPHID in", metadata: ["report": "\(Hex.encode(report))"]) }
                    return receiver.accept(report)
                })
            unsent = []
            switch receiver.take() {
            case nil: continue
            case .failure(let error): throw TransportError(.malformedResponse, error.message, underlying: error)
            case .success(let message):
                guard message.command == .keepalive else { return message }
                guard let status = message.payload.first else {
                    throw TransportError(
                        .malformedResponse, "The security key sent an empty CTAPHID keepalive.")
                }
                keepalive(KeepaliveStatus(rawValue: status))
            }
        }
    }

    /// Runs CTAPHID_INIT on `channel` with a fresh nonce, ignoring anything but the matching answer.
    nonisolated(nonsending) private static func initialize(
        pipe: any CTAPHIDReportPipe, channel: UInt32, deadline: Deadline, logger: Logger
    ) async throws(TransportError) -> CTAPHIDInitResponse {
        let nonce = SystemRandom.bytes(CTAPHIDInitResponse.nonceSize)
        let request = CTAPHIDMessage(channel: channel, command: .initialize, payload: nonce)
        let reports: [[UInt8]]
        do {
            reports = try request.reports(reportSize: pipe.reportSize)
        } catch {
            throw TransportError(.notSupported, error.message, underlying: error)
        }
        var backoff: Duration = .milliseconds(10)
        var sawBusy = false
        while true {
            try checkCancellation()
            // Sent with the first read, in one trip to the pipe's thread where it has one.
            var unsent = reports
            var assembler = CTAPHIDMessageAssembler(channel: channel, reportSize: pipe.reportSize)
            var busy = false
            while !busy {
                try checkCancellation()
                let remaining = deadline.remaining
                guard remaining > .zero else {
                    if sawBusy { throw stayedBusy }
                    throw TransportError(.timeout, "The security key did not answer CTAPHID_INIT in time.")
                }
                let read = try await pipe.transfer(
                    sending: unsent, readingFor: min(readSlice, remaining), limit: 1, until: { _ in true })
                unsent = []
                guard let report = read.first else { continue }
                logger.trace("CTAPHID in", metadata: ["report": "\(Hex.encode(report))"])
                // Leftovers of an aborted exchange may still arrive: skip anything that is not
                // the answer to this INIT rather than fail on it.
                guard case .complete(let message)? = try? assembler.append(report) else { continue }
                switch message.command {
                case .initialize:
                    guard let info = try? CTAPHIDInitResponse(payload: message.payload), info.nonce == nonce
                    else {
                        continue
                    }
                    guard info.channel != 0, info.channel != CTAPHIDMessage.broadcastChannel else {
                        throw TransportError(
                            .malformedResponse, "The security key allocated an invalid CTAPHID channel.")
                    }
                    return info
                case .error where message.payload.first == CTAPHIDErrorCode.channelBusy.rawValue:
                    busy = true
                    sawBusy = true
                case .error:
                    throw deviceError(
                        CTAPHIDErrorCode(rawValue: message.payload.first ?? CTAPHIDErrorCode.other.rawValue))
                default:
                    continue
                }
            }
            try await backOff(&backoff, deadline: deadline, logger: logger)
        }
    }
}

/// Assembles the reports of one channel as a pipe reads them, possibly on the pipe's own thread:
/// ``accept(_:)`` says when a message (or an error) is ready, ``take()`` hands it over.
final class CTAPHIDReceiver: Sendable {
    private let state: Mutex<(assembler: CTAPHIDMessageAssembler, ready: Result<CTAPHIDMessage, CTAPHIDError>?)>

    init(channel: UInt32, reportSize: Int) {
        state = Mutex((CTAPHIDMessageAssembler(channel: channel, reportSize: reportSize), nil))
    }

    /// Feeds one report; true once a message is complete or the reports broke the protocol.
    func accept(_ report: UnsafeRawBufferPointer) -> Bool {
        state.withLock { state in
            do throws(CTAPHIDError) {
                if case .complete(let message) = try state.assembler.append(bytes: report) {
                    state.ready = .success(message)
                    return true
                }
                return false
            } catch {
                state.ready = .failure(error)
                return true
            }
        }
    }

    /// The completed message or the error, once; nil when neither is ready.
    func take() -> Result<CTAPHIDMessage, CTAPHIDError>? {
        state.withLock { state in
            defer { state.ready = nil }
            return state.ready
        }
    }
}
