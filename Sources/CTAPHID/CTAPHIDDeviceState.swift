/// The device side of CTAPHID as a pure state machine (CTAP 2.1 §11.2): a server feeds it every
/// report it receives and the clock, and carries out the actions it returns.
///
/// It allocates channels, reassembles one message at a time with a per-message timeout, answers
/// INIT, PING and LOCK itself, answers ERR_CHANNEL_BUSY to other channels while a transaction is
/// in flight or the device is locked, and turns CANCEL into an action for the server.
public struct CTAPHIDDeviceState: Sendable {
    /// Something the server must do.
    public enum Action: Hashable, Sendable {
        /// Send this message to the host (segment it with ``CTAPHIDMessage/reports(reportSize:)``).
        case send(CTAPHIDMessage)
        /// Process this CBOR, MSG or WINK request, then call
        /// ``CTAPHIDDeviceState/finish(transaction:)`` and, when it returns true, send the reply
        /// on the same channel.
        case process(CTAPHIDMessage, transaction: UInt64)
        /// Cancel the request in flight on this channel; its reply is still sent when it ends.
        case cancel(channel: UInt32)
    }

    private struct Assembly: Sendable {
        var channel: UInt32
        var assembler: CTAPHIDMessageAssembler
        var lastReport: ContinuousClock.Instant
    }

    /// The size of every report.
    public let reportSize: Int
    /// The INIT response's version and capability fields (nonce and channel are filled in).
    public var deviceInfo: CTAPHIDInitResponse
    /// How long a host may take between the packets of one message before ERR_MSG_TIMEOUT.
    public var messageTimeout: Duration
    /// The longest lock a host may request (CTAPHID_LOCK allows up to 10 s).
    public static let maxLockSeconds: UInt8 = 10

    private var nextChannel: UInt32 = 1
    private var assembly: Assembly?
    private var processing: (channel: UInt32, transaction: UInt64)?
    private var lastTransaction: UInt64 = 0
    private var lock: (channel: UInt32, until: ContinuousClock.Instant)?

    /// Creates the state for a device whose reports are `reportSize` bytes long and whose INIT
    /// response carries the versions and capabilities in `deviceInfo`.
    public init(
        reportSize: Int = CTAPHIDMessage.defaultReportSize, deviceInfo: CTAPHIDInitResponse,
        messageTimeout: Duration = .milliseconds(500)
    ) {
        self.reportSize = reportSize
        self.deviceInfo = deviceInfo
        self.messageTimeout = messageTimeout
    }

    /// The channel whose message is being received, if any.
    public var assemblingChannel: UInt32? { assembly?.channel }

    /// The channel whose request is being processed, if any.
    public var processingChannel: UInt32? { processing?.channel }

    /// Handles one report from a host. Reports that are not exactly one report long are dropped.
    public mutating func receive(_ report: [UInt8], at now: ContinuousClock.Instant) -> [Action] {
        guard report.count == reportSize, let packet = try? CTAPHIDPacket(report: report) else { return [] }
        var actions = expire(at: now)
        if let held = lock, held.until <= now { lock = nil }
        let channel = packet.channel
        switch packet.kind {
        case .continuation:
            // Spurious continuation packets for a channel that is not sending are ignored (§11.2.4).
            guard var current = assembly, current.channel == channel else { return actions }
            do {
                let step = try current.assembler.append(report)
                current.lastReport = now
                assembly = current
                if case .complete(let message) = step {
                    assembly = nil
                    actions += dispatch(message, at: now)
                }
            } catch {
                assembly = nil
                actions.append(.send(errorMessage(channel, .invalidSequence)))
            }
            return actions
        case .initialization(let command, let length):
            if command == .initialize {
                // INIT needs no assembly (its payload is 8 bytes) and is answered even when busy.
                if assembly?.channel == channel { assembly = nil }
                actions += initialize(channel: channel, length: length, data: packet.data, at: now)
                return actions
            }
            if command == .cancel {
                if processing?.channel == channel { actions.append(.cancel(channel: channel)) }
                if assembly?.channel == channel { assembly = nil }
                return actions
            }
            guard channel != CTAPHIDMessage.broadcastChannel, channel != 0, channel < nextChannel else {
                actions.append(.send(errorMessage(channel, .invalidChannel)))
                return actions
            }
            if let current = assembly {
                if current.channel == channel {
                    assembly = nil
                    actions.append(.send(errorMessage(channel, .invalidSequence)))
                } else {
                    actions.append(.send(errorMessage(channel, .channelBusy)))
                }
                return actions
            }
            if processing != nil || (lock.map { $0.channel != channel } ?? false) {
                actions.append(.send(errorMessage(channel, .channelBusy)))
                return actions
            }
            guard length <= CTAPHIDMessage.maxPayloadSize(reportSize: reportSize) else {
                actions.append(.send(errorMessage(channel, .invalidLength)))
                return actions
            }
            var assembler = CTAPHIDMessageAssembler(channel: channel, reportSize: reportSize)
            do {
                if case .complete(let message) = try assembler.append(report) {
                    actions += dispatch(message, at: now)
                } else {
                    assembly = Assembly(channel: channel, assembler: assembler, lastReport: now)
                }
            } catch {
                actions.append(.send(errorMessage(channel, .invalidLength)))
            }
            return actions
        }
    }

    /// Drops a message whose host stopped sending, answering ERR_MSG_TIMEOUT. Call it periodically.
    public mutating func expire(at now: ContinuousClock.Instant) -> [Action] {
        guard let current = assembly, now - current.lastReport >= messageTimeout else { return [] }
        assembly = nil
        return [.send(errorMessage(current.channel, .messageTimeout))]
    }

    /// Ends a transaction, so other channels are served again. Returns false when the transaction
    /// was aborted meanwhile (its channel re-sent INIT), in which case its reply must not be sent.
    public mutating func finish(transaction: UInt64) -> Bool {
        guard processing?.transaction == transaction else { return false }
        processing = nil
        return true
    }

    private mutating func startTransaction(_ message: CTAPHIDMessage) -> [Action] {
        lastTransaction &+= 1
        processing = (message.channel, lastTransaction)
        return [.process(message, transaction: lastTransaction)]
    }

    private mutating func dispatch(_ message: CTAPHIDMessage, at now: ContinuousClock.Instant) -> [Action] {
        let channel = message.channel
        switch message.command {
        case .ping:
            return [.send(message)]
        case .cbor where !deviceInfo.capabilities.contains(.cbor),
            .msg where deviceInfo.capabilities.contains(.noMSG):
            // A command the INIT capabilities disclaim (a U2F-only key has no CBOR).
            return [.send(errorMessage(channel, .invalidCommand))]
        case .cbor, .msg:
            return startTransaction(message)
        case .wink:
            guard deviceInfo.capabilities.contains(.wink) else {
                return [.send(errorMessage(channel, .invalidCommand))]
            }
            guard message.payload.isEmpty else { return [.send(errorMessage(channel, .invalidLength))] }
            return startTransaction(message)
        case .lock:
            guard message.payload.count == 1 else { return [.send(errorMessage(channel, .invalidLength))] }
            let seconds = message.payload[0]
            guard seconds <= Self.maxLockSeconds else {
                return [.send(errorMessage(channel, .invalidParameter))]
            }
            lock = seconds == 0 ? nil : (channel, now + .seconds(Int(seconds)))
            return [.send(CTAPHIDMessage(channel: channel, command: .lock, payload: []))]
        default:
            return [.send(errorMessage(channel, .invalidCommand))]
        }
    }

    private mutating func initialize(
        channel: UInt32, length: Int, data: ArraySlice<UInt8>, at now: ContinuousClock.Instant
    ) -> [Action] {
        guard length == CTAPHIDInitResponse.nonceSize, data.count >= length else {
            return [.send(errorMessage(channel, .invalidLength))]
        }
        let allocated: UInt32
        if channel == CTAPHIDMessage.broadcastChannel {
            allocated = nextChannel
            nextChannel += 1
            if nextChannel == CTAPHIDMessage.broadcastChannel { nextChannel = 1 }
        } else if channel != 0, channel < nextChannel {
            // Resynchronisation: abort what this channel had in flight.
            allocated = channel
            if lock?.channel == channel { lock = nil }
        } else {
            return [.send(errorMessage(channel, .invalidChannel))]
        }
        var actions: [Action] = []
        if processing?.channel == channel {
            actions.append(.cancel(channel: channel))
            processing = nil
        }
        var response = deviceInfo
        response.nonce = Array(data.prefix(CTAPHIDInitResponse.nonceSize))
        response.channel = allocated
        actions.append(
            .send(CTAPHIDMessage(channel: channel, command: .initialize, payload: response.payload)))
        return actions
    }

    private func errorMessage(_ channel: UInt32, _ code: CTAPHIDErrorCode) -> CTAPHIDMessage {
        CTAPHIDMessage(channel: channel, command: .error, payload: [code.rawValue])
    }
}
