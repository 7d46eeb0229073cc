import CTAPHID
import Logging
import Synchronization
import Transport

/// The transport-independent part of a CTAPHID server (UDP, uhid): feeds reports to a
/// ``CTAPHIDDeviceState``, runs requests on a ``CTAPMessageHandler`` while sending KEEPALIVE
/// every ``keepaliveInterval``, and turns CTAPHID_CANCEL into task cancellation of the request.
///
/// `Peer` is where a channel's replies go (a UDP address; nothing for uhid).
final class CTAPHIDServerEngine<Peer: Sendable>: Sendable {
    private struct State: Sendable {
        var device: CTAPHIDDeviceState
        var peers: [UInt32: Peer] = [:]
        var cancels: [UInt32: (transaction: UInt64, continuation: AsyncStream<Void>.Continuation)] = [:]
    }

    private enum Event: Sendable {
        case reply([UInt8])
        case cancelRequested
        case idle
    }

    let handler: any CTAPMessageHandler
    let keepaliveInterval: Duration
    /// With ``VirtualKeyFault/silentAfterInit``, only CTAPHID_INIT is answered.
    let silentAfterInit: Bool
    private let state: Mutex<State>
    private let send: @Sendable ([UInt8], Peer) -> Void
    private let logger: Logger

    init(
        handler: any CTAPMessageHandler, device: CTAPHIDDeviceState, keepaliveInterval: Duration,
        fault: VirtualKeyFault? = nil, logger: Logger,
        send: @escaping @Sendable ([UInt8], Peer) -> Void
    ) {
        self.handler = handler
        self.keepaliveInterval = keepaliveInterval
        self.silentAfterInit = fault == .silentAfterInit
        self.state = Mutex(State(device: device))
        self.logger = logger
        self.send = send
    }

    var reportSize: Int { state.withLock { $0.device.reportSize } }

    /// Whether a message is half received, so ``expire()`` has work to do when time passes.
    var isAssembling: Bool { state.withLock { $0.device.assemblingChannel != nil } }

    /// Handles one report from `peer`; requests that need the handler are added to `group`.
    func receive(_ report: [UInt8], from peer: Peer, in group: inout DiscardingTaskGroup) {
        let (actions, size) = state.withLock { state -> ([CTAPHIDDeviceState.Action], Int) in
            let actions = state.device.receive(report, at: .now)
            // Remember who is sending a message, for ERR_MSG_TIMEOUT; only the one channel the
            // device is assembling, so a flood of made-up channels cannot grow the table.
            if let channel = state.device.assemblingChannel, channel == CTAPHIDPacket.channel(of: report) {
                state.peers[channel] = peer
            }
            return (actions, state.device.reportSize)
        }
        for action in actions {
            // The fault: a channel is allocated, then the key says nothing more (the request
            // stays "in progress" in the device state, as in a key whose firmware hung).
            if silentAfterInit {
                if case .send(let message) = action, message.command == .initialize {
                    transmit(message, size: size, to: peer)
                } else {
                    logger.debug("fault silent-after-init: left unanswered")
                }
                continue
            }
            switch action {
            case .send(let message):
                transmit(message, size: size, to: peer)
            case .process(let message, let transaction):
                state.withLock { $0.peers[message.channel] = nil }
                group.addTask { await self.process(message, transaction: transaction, peer: peer) }
            case .cancel(let channel):
                logger.debug("CTAPHID cancel", metadata: ["cid": "\(channel)"])
                _ = state.withLock { $0.cancels[channel] }?.continuation.yield()
            }
        }
    }

    /// Times out stalled messages; call it whenever a receive slice ends.
    func expire() {
        let (actions, peers, size) = state.withLock { state in
            let actions = state.device.expire(at: .now)
            let peers = state.peers
            for case .send(let message) in actions { state.peers[message.channel] = nil }
            return (actions, peers, state.device.reportSize)
        }
        for case .send(let message) in actions {
            if let peer = peers[message.channel] { transmit(message, size: size, to: peer) }
        }
    }

    private func transmit(_ message: CTAPHIDMessage, size: Int, to peer: Peer) {
        guard let reports = try? message.reports(reportSize: size) else {
            logger.error("CTAPHID reply too large to send", metadata: ["bytes": "\(message.payload.count)"])
            return
        }
        for report in reports { send(report, peer) }
    }

    private func process(_ message: CTAPHIDMessage, transaction: UInt64, peer: Peer) async {
        let (cancelRequests, cancelContinuation) = AsyncStream.makeStream(of: Void.self)
        state.withLock { $0.cancels[message.channel] = (transaction, cancelContinuation) }
        let status = KeepaliveStatusBox()
        let handler = self.handler
        let size = reportSize
        let reply: [UInt8] = await withTaskGroup(of: Event.self) { group in
            group.addTask {
                switch message.command {
                case .cbor:
                    .reply(
                        await handler.handleCBOR(message.payload) { keepalive in
                            status.value.withLock { $0 = keepalive.rawValue }
                        })
                case .msg:
                    .reply(await handler.handleU2F(message.payload))
                default:
                    .reply(
                        await {
                            await handler.wink(); return []
                        }())
                }
            }
            group.addTask {
                while (try? await Task.sleep(for: self.keepaliveInterval)) != nil {
                    let keepalive = CTAPHIDMessage(
                        channel: message.channel, command: .keepalive, payload: [status.value.withLock { $0 }]
                    )
                    self.transmit(keepalive, size: size, to: peer)
                }
                return .idle
            }
            group.addTask {
                for await _ in cancelRequests { return .cancelRequested }
                return .idle
            }
            var reply: [UInt8] = []
            for await event in group {
                switch event {
                case .reply(let bytes):
                    reply = bytes
                    group.cancelAll()
                case .cancelRequested:
                    // Cancels the handler too; it answers CTAP2_ERR_KEEPALIVE_CANCEL, sent below.
                    group.cancelAll()
                case .idle:
                    break
                }
            }
            return reply
        }
        cancelContinuation.finish()
        let current = state.withLock { state -> Bool in
            if state.cancels[message.channel]?.transaction == transaction {
                state.cancels[message.channel] = nil
            }
            return state.device.finish(transaction: transaction)
        }
        guard current else {
            logger.debug(
                "CTAPHID reply dropped: the channel was re-initialised",
                metadata: ["cid": "\(message.channel)"])
            return
        }
        transmit(
            CTAPHIDMessage(channel: message.channel, command: message.command, payload: reply), size: size,
            to: peer)
    }
}

/// The latest keepalive status a handler reported, shared with the keepalive ticker.
private final class KeepaliveStatusBox: Sendable {
    let value = Mutex<UInt8>(CTAPHIDKeepaliveStatus.processing.rawValue)
}
