import ISO7816
import Logging
import Transport

/// The card side of CTAP 2.1 §11.3 (NFC): the FIDO applet answering APDUs from the reader.
///
/// Owned by one connection's serve loop; not shared.
final class VPCDCard {
    /// What the serve loop does with an incoming message.
    enum Action {
        /// Send these bytes back.
        case reply([UInt8])
        /// Start this request as a child task, then ask ``VPCDCard/replyAfterStart(_:)`` for the reply.
        case start(VPCDPendingRequest, message: [UInt8])
        /// Nothing to send (power on/off/reset).
        case none
    }

    private let handler: any CTAPMessageHandler
    private let configuration: VPCDCardServer.Configuration
    private let logger: Logger

    private var powered = false
    private var selected = false
    private var chain: (header: [UInt8], data: [UInt8])?
    private var pendingOutput: [UInt8] = []
    private var pendingStatus = StatusWord.success
    private var pending: VPCDPendingRequest?
    /// The Le of the NFCCTAP_MSG that started `pending`, for its immediate reply.
    private var lastLe = CommandAPDU.maxShortLe

    /// The largest command a chain may build up (well above any CTAP message).
    private static let maxChainCount = 65536

    init(handler: any CTAPMessageHandler, configuration: VPCDCardServer.Configuration, logger: Logger) {
        self.handler = handler
        self.configuration = configuration
        self.logger = logger
    }

    /// Control codes of the vpcd protocol (a one-byte message).
    enum Control: UInt8 {
        case powerOff = 0, powerOn = 1, reset = 2, getATR = 4
    }

    /// Handles one vpcd message.
    func receive(_ message: [UInt8]) async -> Action {
        if message.count == 1 {
            guard let control = Control(rawValue: message[0]) else {
                logger.debug("unknown vpcd control code", metadata: ["code": "\(message[0])"])
                return .none
            }
            switch control {
            case .getATR:
                return .reply(configuration.atr)
            case .powerOff:
                logger.debug("card power off")
                resetState()
                powered = false
                return .none
            case .powerOn, .reset:
                logger.debug("card power on", metadata: ["reset": "\(control == .reset)"])
                resetState()
                powered = true
                await handler.powerCycle()
                return .none
            }
        }
        if configuration.shortAPDUsOnly, message.count >= 7, message[4] == 0 {
            return .reply(StatusWord.wrongLength.bytes)
        }
        let command: CommandAPDU
        do { command = try CommandAPDU(bytes: message) } catch {
            return .reply(StatusWord.wrongLength.bytes)
        }
        if logger.logLevel <= .trace { logger.trace("card APDU", metadata: ["apdu": "\(command)"]) }
        return await respond(to: command, raw: message)
    }

    /// The reply once a started request has finished, or after a short while (then the reader
    /// polls with NFCCTAP_GETRESPONSE). Woken by the request's end, not by polling it.
    func replyAfterStart(_ request: VPCDPendingRequest) async -> [UInt8] {
        await request.waitForResult(within: configuration.immediateReplyWindow)
        return pollReply(le: lastLe)
    }

    private func resetState() {
        selected = false
        chain = nil
        pendingOutput = []
        pending?.requestCancel()
        pending = nil
    }

    private func respond(to command: CommandAPDU, raw: [UInt8]) async -> Action {
        let header = [command.cla & ~CommandAPDU.chainingBit, command.ins, command.p1, command.p2]
        // Command chaining (ISO/IEC 7816-4 §5.4.1): gather segments until one without the bit.
        if command.isChained {
            if let current = chain, current.header != header {
                chain = nil
                return .reply(StatusWord.lastCommandOfChainExpected.bytes)
            }
            let sofar = chain?.data ?? []
            guard sofar.count + command.data.count <= Self.maxChainCount else {
                chain = nil
                return .reply(StatusWord.wrongLength.bytes)
            }
            chain = (header, sofar + command.data)
            return .reply(StatusWord.success.bytes)
        }
        var whole = command
        var wasChained = false
        if let current = chain {
            chain = nil
            guard current.header == header else {
                return .reply(StatusWord.lastCommandOfChainExpected.bytes)
            }
            whole.data = current.data + command.data
            wasChained = true
        }
        let extended = raw.count >= 7 && raw[4] == 0
        // An extended command without Le takes the whole answer (python-fido2's extended mode
        // reads no 61xx); a short one at most 256 bytes per response.
        let le =
            extended
            ? min(whole.le ?? CommandAPDU.maxExtendedLe, CommandAPDU.maxExtendedLe - 2)
            : min(whole.le ?? CommandAPDU.maxShortLe, CommandAPDU.maxShortLe)

        if whole.cla == 0x00 && whole.ins == Instruction.getResponse.rawValue {
            guard !pendingOutput.isEmpty else { return .reply(StatusWord.conditionsNotSatisfied.bytes) }
            return .reply(output(pendingOutput, status: pendingStatus, le: le))
        }
        pendingOutput = []

        if whole.cla == 0x00 && whole.ins == Instruction.select.rawValue && whole.p1 == 0x04 {
            selected = whole.data == FIDOApplet.aid
            guard selected else { return .reply(StatusWord.fileNotFound.bytes) }
            return .reply(output(configuration.selectAnswer, status: .success, le: le))
        }
        guard selected else { return .reply(StatusWord.conditionsNotSatisfied.bytes) }
        if configuration.fault == .silentAfterSelect {
            // The fault: the reader (vpcd, pcscd, SCardTransmit) waits for an answer that never
            // comes, until the card leaves.
            logger.debug("fault silent-after-select: APDU left unanswered")
            return .none
        }

        switch (whole.cla, whole.ins) {
        case (FIDOApplet.ctapClass, Instruction.nfcctapMessage.rawValue) where !configuration.acceptsCTAP2,
            (FIDOApplet.ctapClass, Instruction.nfcctapGetResponse.rawValue) where !configuration.acceptsCTAP2:
            return .reply(StatusWord.instructionNotSupported.bytes)
        case (FIDOApplet.ctapClass, Instruction.nfcctapMessage.rawValue):
            if let pending, pending.result == nil {
                return .reply(StatusWord.conditionsNotSatisfied.bytes)
            }
            guard !whole.data.isEmpty else { return .reply(StatusWord.wrongLength.bytes) }
            let request = VPCDPendingRequest()
            pending = request
            lastLe = le
            return .start(request, message: whole.data)
        case (FIDOApplet.ctapClass, Instruction.nfcctapGetResponse.rawValue):
            guard let pending else { return .reply(StatusWord.conditionsNotSatisfied.bytes) }
            if whole.p1 == FIDOApplet.cancel {
                logger.debug("reader cancelled the pending message")
                pending.requestCancel()
            }
            return .reply(pollReply(le: le))
        case (0x00, Instruction.u2fRegister.rawValue), (0x00, Instruction.u2fAuthenticate.rawValue),
            (0x00, Instruction.u2fVersion.rawValue):
            let request = wasChained ? ((try? whole.encoded(.extended)) ?? raw) : raw
            let reply = await handler.handleU2F(request)
            guard reply.count >= 2 else { return .reply(StatusWord.noPreciseDiagnosis.bytes) }
            let status = StatusWord(sw1: reply[reply.count - 2], sw2: reply[reply.count - 1])
            return .reply(output(Array(reply.dropLast(2)), status: status, le: le))
        case (_, _) where whole.cla != 0x00 && whole.cla != FIDOApplet.ctapClass:
            return .reply(StatusWord.classNotSupported.bytes)
        default:
            return .reply(StatusWord.instructionNotSupported.bytes)
        }
    }

    /// `9100` + status while the request runs, its reply once done.
    private func pollReply(le: Int) -> [UInt8] {
        guard let request = pending else { return StatusWord.conditionsNotSatisfied.bytes }
        guard let result = request.result else {
            return [request.status.rawValue] + StatusWord.ctapStillProcessing.bytes
        }
        pending = nil
        return output(result, status: .success, le: le)
    }

    /// Sends up to `le` bytes now; the rest waits for GET RESPONSE behind `61xx`.
    private func output(_ data: [UInt8], status: StatusWord, le: Int) -> [UInt8] {
        guard data.count > le else {
            pendingOutput = []
            return data + status.bytes
        }
        let now = Array(data[..<le])
        pendingOutput = Array(data[le...])
        pendingStatus = status
        let next = min(pendingOutput.count, 256)
        return now + [0x61, UInt8(truncatingIfNeeded: next)]
    }
}
