import _SecurityKeyInternals
import CPCSCLite
import ISO7816
import Logging
import Synchronization
import Transport

/// A FIDO authenticator on a PC/SC card (NFC or contact), spoken to as CTAP 2.1 §11.3 describes:
/// SELECT of the FIDO applet, NFCCTAP_MSG, NFCCTAP_GETRESPONSE polling on `9100`, and U2F APDUs.
///
/// All card I/O runs on the connection's own thread and PC/SC context, one transaction at a time.
public final class PCSCConnection: AuthenticatorConnection, @unchecked Sendable {
    /// How commands larger than a short APDU travel.
    public struct APDUMode: RawRepresentable, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Extended APDUs, falling back to chaining for good once the card answers `6700`.
        public static let automatic = APDUMode(rawValue: 0)
        /// Always extended APDUs.
        public static let extended = APDUMode(rawValue: 1)
        /// Always short APDUs with command chaining (what python-fido2 and libfido2 do).
        public static let short = APDUMode(rawValue: 2)
    }

    /// Connection settings.
    public struct Options: Sendable {
        /// How large commands travel.
        public var apduMode: APDUMode = .automatic
        /// Pause between NFCCTAP_GETRESPONSE polls while the card answers `9100`.
        public var pollInterval: Duration = .milliseconds(100)
        /// How long opening waits while another application holds the card in a PC/SC
        /// transaction (pcscd makes `SCardConnect` wait for it).
        public var connectTimeout: Duration = .seconds(30)
        /// Creates default options.
        public init(
            apduMode: APDUMode = .automatic, pollInterval: Duration = .milliseconds(100),
            connectTimeout: Duration = .seconds(30)
        ) {
            self.apduMode = apduMode
            self.pollInterval = pollInterval
            self.connectTimeout = connectTimeout
        }
    }

    public let descriptor: DeviceDescriptor
    public let capabilities: TransportCapabilities
    /// The reader the card sits in.
    public let readerName: String
    /// The card's ATR (for contactless cards, built by the reader from the ATS).
    public let atr: [UInt8]
    /// The data of the SELECT answer: `U2F_V2` (U2F, maybe CTAP2 too: probe getInfo) or `FIDO_2_0`.
    public let selectResponse: [UInt8]

    private let context: PCSCContext
    private let card: SCARDHANDLE
    private let activeProtocol: DWORD
    private let options: Options
    private let logger: Logger
    // Touched only on the context's thread.
    private var extendedRejected = false
    /// How many ``beginExclusiveAccess(deadline:)`` calls are open. Touched only on the
    /// context's thread, so it moves in step with the jobs that begin and end transactions.
    private var exclusiveDepth = 0
    /// Waits for the card that were given up on (deadline or cancellation) while their job still
    /// sat in `SCardBeginTransaction`: that job lets the card go once it gets it, and until then
    /// every job queues behind it, so ``close()`` must not wait on the thread.
    private let leftoverWaits = Mutex(0)
    private let closed = Mutex(false)
    /// Set when a call was given up on while its `SCardTransmit` still waited: the context's
    /// thread is stuck until the card answers or leaves, so nothing more is sent. The error
    /// later calls get. (A given-up `SCardBeginTransaction` does not set it: see
    /// `holdCard(deadline:nesting:)`.)
    private let abandoned = Mutex<TransportError?>(nil)
    /// How long the work that follows the caller's deadline (or cancellation) may take: telling
    /// a card that is still processing to stop, and checking whether a card that failed an
    /// exchange has left the reader.
    static let afterDeadline = Duration.milliseconds(150)
    /// How long past the caller's deadline a call still inside pcsc-lite is waited for before it
    /// is given up on: a card that never answers holds `SCardTransmit` for ever (pcsc-lite and
    /// the reader driver wait without a timeout). Everything this connection does after a
    /// deadline ends within ``afterDeadline``, so only a stuck C call is given up on.
    static let abandonGrace = Duration.milliseconds(250)
    /// How long a clean-up job (ending a transaction nobody used) is waited for.
    static let cleanupWait = Duration.seconds(2)
    /// How long `open` waits for the answer to SELECT.
    static let selectTimeout = Duration.seconds(5)
    /// False for the short-lived instance `open` uses to SELECT before the real one exists.
    private let ownsResources: Bool

    private init(
        context: PCSCContext, card: SCARDHANDLE, activeProtocol: DWORD, readerName: String, atr: [UInt8],
        selectResponse: [UInt8], options: Options, logger: Logger, ownsResources: Bool = true
    ) {
        self.ownsResources = ownsResources
        self.context = context
        self.card = card
        self.activeProtocol = activeProtocol
        self.readerName = readerName
        self.atr = atr
        self.selectResponse = selectResponse
        self.options = options
        self.logger = logger
        self.descriptor = DeviceDescriptor(uri: "pcsc:\(readerName)", transport: .nfc, product: readerName)
        self.capabilities = selectResponse == FIDOApplet.fido2Version ? [.cbor, .noU2F] : []
    }

    /// Connects (shared) to the card in `reader` and SELECTs the FIDO applet, by `deadline`
    /// when given (waiting at most ``Options/connectTimeout`` for another application to let go
    /// of the card, and ``selectTimeout`` for the answer to SELECT).
    public static func open(
        reader: String, options: Options = Options(), deadline: Deadline? = nil,
        logger: Logger = Logger(label: "securitykey.pcsc")
    ) async throws(TransportError) -> PCSCConnection {
        // A call of ours still waits for this card: another would only queue behind it.
        try PCSCStuckReaders.check(reader)
        let connectDeadline = min(deadline ?? .after(options.connectTimeout), .after(options.connectTimeout))
        let context = try await PCSCContext.establish(name: "pcsc:\(reader)")
        // Set once SELECT was given up on and the context's release is already queued.
        var givenUp = false
        do throws(TransportError) {
            let (card, proto): (SCARDHANDLE, DWORD)
            do {
                (card, proto) = try await waitingForCard(
                    context: context, reader: reader, logger: logger, giveUp: connectDeadline.instant
                ) { () throws(TransportError) in
                    try poweredUp(by: connectDeadline.instant) { () throws(TransportError) in
                        try context.connect(reader: reader)
                    }
                }
            } catch where error.code == .busy || error.code == .cancelled {
                // The thread still waits in SCardConnect: free what it gets once it returns.
                context.releaseDetached(card: nil)
                givenUp = true
                throw error
            }
            do {
                try await waitingForCard(
                    context: context, reader: reader, logger: logger, giveUp: connectDeadline.instant
                ) { () throws(TransportError) in
                    // Reset between our SCardConnect and now: SELECT comes next anyway.
                    do throws(TransportError) {
                        try context.beginTransaction(card)
                    } catch where error.isCardReset {
                        _ = try poweredUp(by: connectDeadline.instant) { () throws(TransportError) in
                            try context.reconnect(card)
                        }
                        try context.beginTransaction(card)
                    }
                }
            } catch where error.code == .busy || error.code == .cancelled {
                // Disconnecting, queued behind the wait, ends the transaction it may still get.
                context.releaseDetached(card: card)
                givenUp = true
                throw error
            }
            let partial = PCSCConnection(
                context: context, card: card, activeProtocol: proto, readerName: reader, atr: [],
                selectResponse: [], options: options, logger: logger, ownsResources: false)
            let (atr, select): ([UInt8], ResponseAPDU)
            let selectDeadline = min(deadline ?? .after(selectTimeout), .after(selectTimeout))
            let call = PCSCStuckCall(reader: reader, kind: .transmit)
            do {
                let giveUp = selectDeadline.instant + abandonGrace
                (atr, select) = try await context.thread.run(givingUpAt: giveUp) {
                    () throws(TransportError) in
                    let began = call.begin()
                    defer {
                        context.endTransaction(card)
                        call.end()
                    }
                    guard began else { throw selectDeadline.timeoutError("SELECT of the FIDO applet") }
                    let atr = (try? context.status(card).atr) ?? []
                    let response = try partial.exchange(
                        .select(aid: FIDOApplet.aid), cancel: nil, deadline: selectDeadline)
                    return (atr, response)
                }
            } catch where error.code == .timeout {
                // The card may still hold the thread: free everything behind it, wait for nothing.
                if call.giveUp() {
                    logger.info("card did not answer SELECT; given up", metadata: ["reader": "\(reader)"])
                }
                context.releaseDetached(card: card)
                givenUp = true
                throw TransportError(
                    .timeout, "The card in \(reader) did not answer SELECT in time.", underlying: error)
            }
            guard select.status == .success else {
                _ = try? await context.thread.run { context.disconnect(card) }
                throw TransportError(
                    .notSupported,
                    "The card in \(reader) has no FIDO applet (SELECT answered \(select.status)).")
            }
            logger.debug(
                "selected FIDO applet", metadata: ["reader": "\(reader)", "version": "\(select.data)"])
            return PCSCConnection(
                context: context, card: card, activeProtocol: proto, readerName: reader, atr: atr,
                selectResponse: select.data, options: options, logger: logger)
        } catch {
            if !givenUp { await context.release() }
            throw error
        }
    }

    public func transact(
        _ command: TransportCommand, payload: [UInt8], deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        guard !closed.withLock({ $0 }) else {
            throw TransportError(.closed, "The PC/SC connection is closed.")
        }
        if let error = abandoned.withLock({ $0 }) { throw error }
        try PCSCStuckReaders.check(readerName)
        let signal = CancellationSignal()
        // One PC/SC transaction per CTAP exchange: another process on the same card waits in
        // pcscd rather than slipping its APDUs between ours (a GETRESPONSE poll, a chain).
        // Inside beginExclusiveAccess the card is held already, and stays held after.
        let began = try await holdCard(deadline: deadline, nesting: false)
        switch command {
        case .cbor:
            return try await guarded(deadline: deadline, signal: signal, endsTransaction: began) {
                [self] () throws(TransportError) in
                try self.cborTransaction(payload, deadline: deadline, cancel: signal, keepalive: keepalive)
            }
        case .u2f:
            let apdu: CommandAPDU
            do { apdu = try CommandAPDU(bytes: payload) } catch {
                if began { await endTransactionOnThread() }
                throw TransportError(.notSupported, "The U2F request is not a valid APDU.", underlying: error)
            }
            return try await guarded(deadline: deadline, signal: signal, endsTransaction: began) {
                [self] () throws(TransportError) in
                if signal.isCancelled { throw TransportError(.cancelled, "The operation was cancelled.") }
                return try self.exchange(apdu, cancel: signal, deadline: deadline).bytes
            }
        default:
            if began { await endTransactionOnThread() }
            throw TransportError(.notSupported, "PC/SC cannot carry \(command) messages.")
        }
    }

    /// Runs `body` on the context's thread, giving up on it ``abandonGrace`` after `deadline`
    /// (a card that never answers holds `SCardTransmit` for ever); a connection given up on
    /// refuses every later call, and its reader stays marked stuck (``PCSCStuckReaders``)
    /// until the call returns. A job given up on before it began does nothing. Ends the
    /// transaction afterwards when `endsTransaction`.
    private func guarded<T: Sendable>(
        deadline: Deadline, signal: CancellationSignal, endsTransaction: Bool,
        _ body: @escaping @Sendable () throws(TransportError) -> T
    ) async throws(TransportError) -> T {
        let call = PCSCStuckCall(reader: readerName, kind: .transmit)
        do {
            return try await context.thread.run(
                givingUpAt: deadline.instant + Self.abandonGrace,
                { [context, card] () throws(TransportError) -> T in
                    let began = call.begin()
                    defer {
                        if endsTransaction { context.endTransaction(card) }
                        call.end()
                    }
                    guard began else { throw deadline.timeoutError("The exchange with the card") }
                    return try body()
                }, onCancel: { signal.cancel() })
        } catch where error.code == .timeout {
            guard call.giveUp() else { throw error }
            abandoned.withLock { $0 = PCSCStuckReaders.stuckError(readerName) }
            logger.info("card stopped answering; connection given up", metadata: ["reader": "\(readerName)"])
            throw TransportError(
                .timeout, "The card in \(readerName) stopped answering.", underlying: error)
        }
    }

    /// `SCardBeginTransaction` on the context's thread unless the card is held already
    /// (``exclusiveDepth``), given up on at `deadline` or on cancellation: the other application
    /// may hold the card for as long as it likes, and nothing interrupts pcsc-lite's wait (it
    /// polls pcscd; `SCardCancel` ends only `SCardGetStatusChange`). Returns whether it began a
    /// transaction; with `nesting`, also counts one more exclusive hold.
    ///
    /// A wait given up on leaves its job in `SCardBeginTransaction`; when that job gets the card
    /// after all, it sees the caller has gone and lets the card go at once, so the connection
    /// stays usable and no other application is locked out by a caller that left.
    private func holdCard(deadline: Deadline, nesting: Bool) async throws(TransportError) -> Bool {
        let context = context, card = card
        let wait = CardWait()
        do throws(TransportError) {
            return try await Self.waitingForCard(
                context: context, reader: readerName, logger: logger, giveUp: deadline.instant
            ) { [self] () throws(TransportError) -> Bool in
                var began = false
                if exclusiveDepth == 0 {
                    do throws(TransportError) {
                        try beginTransactionAfterAnyReset(deadline: deadline)
                    } catch {
                        if wait.fail() { leftoverWaits.withLock { $0 -= 1 } }
                        throw error
                    }
                    began = true
                }
                guard wait.claim(began: began) else {
                    // The caller gave up (deadline or cancellation): let go of what it no longer wants.
                    if began { context.endTransaction(card) }
                    leftoverWaits.withLock { $0 -= 1 }
                    return false
                }
                if nesting { exclusiveDepth += 1 }
                return began
            }
        } catch where error.code == .busy || error.code == .cancelled {
            switch wait.giveUp() {
            case .got(let began):
                // The job got the card just as the caller gave up: it holds it now, so go on.
                return began
            case .waiting:
                leftoverWaits.withLock { $0 += 1 }
                throw error
            case .failed, .gaveUp:
                throw error
            }
        }
    }

    /// `SCardBeginTransaction`; when another application reset the card since this connection's
    /// last transaction (python-fido2, through pyscard, unpowers the card whenever it lets go of
    /// it, and every other handle then gets `SCARD_W_RESET_CARD`), reconnects, begins again and
    /// SELECTs the FIDO applet anew before going on. Nothing of ours was in flight: pcsc-lite
    /// resets a card only between other handles' transactions, and what a ceremony keeps on the
    /// card (key agreement, pinUvAuthToken) is used inside one hold (`CeremonyHold`). A card
    /// that no longer selects as before is a device error. On the context's thread.
    private func beginTransactionAfterAnyReset(deadline: Deadline) throws(TransportError) {
        do throws(TransportError) {
            try context.beginTransaction(card)
            return
        } catch where error.isCardReset {
            logger.info(
                "another application reset the card; reconnecting", metadata: ["reader": "\(readerName)"])
        }
        let active = try Self.poweredUp(by: deadline.instant) { () throws(TransportError) in
            try context.reconnect(card)
        }
        try context.beginTransaction(card)
        let select: ResponseAPDU
        do throws(TransportError) {
            guard active == activeProtocol else {
                throw TransportError(
                    .deviceError, "The card in \(readerName) came back with another protocol after a reset.")
            }
            select = try exchange(.select(aid: FIDOApplet.aid), cancel: nil, deadline: deadline)
        } catch {
            context.endTransaction(card)
            throw error
        }
        guard select.status == .success, select.data == selectResponse else {
            context.endTransaction(card)
            throw TransportError(
                .deviceError,
                "The card in \(readerName) answered SELECT of the FIDO applet with \(select.status) after "
                    + "another program reset it.")
        }
    }

    /// How long a card another application has just unpowered may take to be powered again:
    /// meanwhile pcscd answers `SCardConnect` and `SCardReconnect` with `SCARD_W_UNPOWERED_CARD`
    /// (python-fido2, through pyscard, unpowers the card whenever it lets go of it; pcscd powers
    /// it again within a second, with pcsc-lite 1.9.9 and vpcd).
    static let powerUpWait = Duration.seconds(2)

    /// Runs `call` (`SCardConnect` or `SCardReconnect`) again every 100 ms while it says the card
    /// is unpowered, for at most ``powerUpWait`` and never past `deadline`; a card still
    /// unpowered then is a device error. On the context's thread.
    private static func poweredUp<T>(
        by deadline: ContinuousClock.Instant, _ call: () throws(TransportError) -> T
    ) throws(TransportError) -> T {
        let end = min(deadline, .now + powerUpWait)
        let pause = CancellationSignal()
        while true {
            do throws(TransportError) {
                return try call()
            } catch where error.isCardUnpowered && ContinuousClock.now < end {
                _ = pause.wait(.milliseconds(100))
            }
        }
    }

    /// `SCardEndTransaction` on the context's thread, for a transaction `holdCard(deadline:nesting:)`
    /// began that no exchange will end.
    private func endTransactionOnThread() async {
        let context = context, card = card
        _ = try? await context.thread.run(givingUpAt: .now + Self.cleanupWait) {
            context.endTransaction(card)
        }
    }

    public func beginExclusiveAccess(deadline: Deadline) async throws(TransportError) {
        guard !closed.withLock({ $0 }) else {
            throw TransportError(.closed, "The PC/SC connection is closed.")
        }
        if let error = abandoned.withLock({ $0 }) { throw error }
        try PCSCStuckReaders.check(readerName)
        _ = try await holdCard(deadline: deadline, nesting: true)
    }

    public func endExclusiveAccess() async {
        guard !closed.withLock({ $0 }), abandoned.withLock({ $0 }) == nil else { return }
        let context = context, card = card
        // Queued behind any exchange still running; bounded, since a card that stopped answering
        // holds the thread (the job then runs whenever the thread is free again).
        _ = try? await context.thread.run(givingUpAt: .now + Self.cleanupWait) { [self] in
            guard exclusiveDepth > 0 else { return }
            exclusiveDepth -= 1
            if exclusiveDepth == 0 { context.endTransaction(card) }
        }
    }

    /// How long a wait for the card lasts before the user is told another application holds it
    /// (pcscd answers at once when nobody does).
    static let busyNotice = Duration.milliseconds(250)

    /// Runs `body` (a pcsc-lite call that waits while another application holds the card) on
    /// the context's thread, says once that the card is busy when it takes longer than
    /// ``busyNotice``, and gives up at `giveUp` with a `busy` error, or at once with a
    /// `cancelled` error when the calling task is cancelled (Ctrl-C in the CLI). A wait given
    /// up on counts against the reader (``PCSCStuckReaders``) until its call returns.
    private static func waitingForCard<T: Sendable>(
        context: PCSCContext, reader: String, logger: Logger, giveUp: ContinuousClock.Instant,
        _ body: @escaping @Sendable () throws(TransportError) -> T
    ) async throws(TransportError) -> T {
        let finished = Finished()
        let call = PCSCStuckCall(reader: reader, kind: .wait)
        let result = await withTaskGroup(of: Void.self, returning: Result<T, TransportError>.self) { group in
            group.addTask {
                do { try await Task.sleep(for: busyNotice) } catch { return }
                guard !finished.value.withLock({ $0 }) else { return }
                finished.told.withLock { $0 = true }
                // Same words, and level, as a CTAPHID key answering ERR_CHANNEL_BUSY.
                logger.warning(
                    "The security key is busy with another application; waiting for it.",
                    metadata: ["uri": "pcsc:\(reader)"])
            }
            let result: Result<T, TransportError>
            do throws(TransportError) {
                result = .success(
                    try await context.thread.run(givingUpAt: giveUp, cancelGivesUp: true) {
                        () throws(TransportError) -> T in
                        _ = call.begin()
                        defer { call.end() }
                        return try body()
                    })
            } catch {
                _ = call.giveUp()
                result = .failure(error)
            }
            finished.value.withLock { $0 = true }
            group.cancelAll()
            return result
        }
        do throws(TransportError) {
            return try result.get()
        } catch where error.code == .timeout {
            throw TransportError(
                .busy, "The security key stayed busy with another application until the deadline.",
                underlying: error)
        } catch where error.code == .cancelled {
            let held = finished.told.withLock { $0 } ? ", which another application held" : ""
            throw TransportError(
                .cancelled, "The operation was cancelled while waiting for the security key\(held).",
                underlying: error)
        }
    }

    deinit {
        // Dropped without close(): free the card and the context on their own thread.
        if ownsResources, !closed.withLock({ $0 }) { context.releaseDetached(card: card) }
    }

    public func close() async {
        let wasClosed = closed.withLock { c -> Bool in
            defer { c = true }; return c
        }
        guard !wasClosed else { return }
        let context = context, card = card
        if abandoned.withLock({ $0 }) != nil || leftoverWaits.withLock({ $0 }) != 0 {
            // The thread may still wait for the card: queue the clean-up behind it.
            context.releaseDetached(card: card)
            return
        }
        _ = try? await context.thread.run { context.disconnect(card) }
        await context.release()
    }

    // MARK: On the context's thread

    /// NFCCTAP_MSG, then NFCCTAP_GETRESPONSE every poll interval while the card answers `9100`.
    private func cborTransaction(
        _ payload: [UInt8], deadline: Deadline, cancel: CancellationSignal,
        keepalive: @Sendable (KeepaliveStatus) -> Void
    ) throws(TransportError) -> [UInt8] {
        if cancel.isCancelled { throw TransportError(.cancelled, "The operation was cancelled.") }
        let message = CommandAPDU(
            cla: FIDOApplet.ctapClass, ins: Instruction.nfcctapMessage.rawValue,
            p1: FIDOApplet.getResponseSupported, p2: 0, data: payload)
        var response = try exchange(message, cancel: cancel, deadline: deadline)
        while response.status == .ctapStillProcessing {
            keepalive(KeepaliveStatus(rawValue: response.data.first ?? KeepaliveStatus.processing.rawValue))
            var ending: TransportError?
            // The last pause ends at the deadline, not a poll interval past it.
            if cancel.wait(deadline.slice(atMost: options.pollInterval)) {
                ending = TransportError(.cancelled, "The operation was cancelled.")
            } else if deadline.hasPassed {
                ending = TransportError(.timeout, "The authenticator did not answer in time.")
            }
            if let ending {
                logger.debug("cancelling NFCCTAP message", metadata: ["reason": "\(ending.code)"])
                // python-fido2 cancels through NFCCTAP_GETRESPONSE with P1 0x11; the card then
                // finishes the message (CTAP2_ERR_KEEPALIVE_CANCEL). Bounded by afterDeadline,
                // then give up: the caller's deadline is not extended.
                let stop = Deadline.after(Self.afterDeadline)
                var poll = try? exchange(getResponse(p1: FIDOApplet.cancel), cancel: nil, deadline: stop)
                while poll?.status == .ctapStillProcessing, !stop.hasPassed {
                    _ = CancellationSignal().wait(stop.slice(atMost: options.pollInterval))
                    poll = try? exchange(getResponse(p1: 0), cancel: nil, deadline: stop)
                }
                throw ending
            }
            response = try exchange(getResponse(p1: 0), cancel: cancel, deadline: deadline)
        }
        guard response.status == .success else {
            throw TransportError(
                .deviceError, "The card answered \(response.status): \(response.status.message)")
        }
        return response.data
    }

    private func getResponse(p1: UInt8) -> CommandAPDU {
        CommandAPDU(cla: FIDOApplet.ctapClass, ins: Instruction.nfcctapGetResponse.rawValue, p1: p1, p2: 0)
    }

    /// Sends one command (extended or chained), then follows `61xx` and `6Cxx` to the end, or
    /// to `deadline` for a card that never ends them.
    func exchange(
        _ command: CommandAPDU, cancel: CancellationSignal?, deadline: Deadline? = nil
    ) throws(TransportError) -> ResponseAPDU {
        var command = command
        let fitsShort = command.data.count <= CommandAPDU.maxShortDataCount
        let useExtended =
            !fitsShort && options.apduMode != .short && !(options.apduMode == .automatic && extendedRejected)
        var last: CommandAPDU
        var response: ResponseAPDU
        if useExtended {
            command.le = command.le ?? CommandAPDU.maxExtendedLe
            last = command
            response = try transmit(command, form: .extended, deadline: deadline)
            if response.status == .wrongLength, options.apduMode == .automatic {
                logger.info(
                    "card rejected an extended APDU; chaining from now on",
                    metadata: ["reader": "\(readerName)"])
                extendedRejected = true
                return try exchange(command.withShortLe, cancel: cancel, deadline: deadline)
            }
        } else {
            command.le = min(command.le ?? CommandAPDU.maxShortLe, CommandAPDU.maxShortLe)
            let segments: [CommandAPDU]
            do { segments = try command.chained() } catch {
                throw TransportError(.messageTooLarge, "The command is too large to send.", underlying: error)
            }
            last = segments[segments.count - 1]
            response = ResponseAPDU(status: .success)
            for (i, segment) in segments.enumerated() {
                if i > 0, cancel?.isCancelled == true {
                    throw TransportError(.cancelled, "The operation was cancelled.")
                }
                response = try transmit(segment, form: .short, deadline: deadline)
                if i < segments.count - 1, response.status != .success {
                    return response
                }
            }
        }
        var assembler = ResponseAssembler(command: last)
        while true {
            let step: ResponseAssembler.Step
            do { step = try assembler.receive(response) } catch {
                throw TransportError(.malformedResponse, error.message, underlying: error)
            }
            switch step {
            case .complete(let whole): return whole
            case .send(let next):
                if deadline?.hasPassed == true {
                    throw TransportError(.timeout, "The card kept its response going past the deadline.")
                }
                if cancel?.isCancelled == true { throw TransportError(.cancelled, "The operation was cancelled.") }
                response = try transmit(next, form: next.minimumForm, deadline: deadline)
            }
        }
    }

    private func transmit(_ command: CommandAPDU, form: CommandAPDU.LengthForm, deadline: Deadline?)
        throws(TransportError) -> ResponseAPDU
    {
        let bytes: [UInt8]
        do { bytes = try command.encoded(form) } catch {
            throw TransportError(.messageTooLarge, error.message, underlying: error)
        }
        if logger.logLevel <= .trace {
            logger.trace("APDU >", metadata: ["apdu": "\(Hex.encode(bytes))"])
        }
        let raw: [UInt8]
        do { raw = try context.transmit(card, activeProtocol: activeProtocol, bytes) } catch {
            throw refine(error, deadline: deadline)
        }
        if logger.logLevel <= .trace {
            logger.trace("APDU <", metadata: ["apdu": "\(Hex.encode(raw))"])
        }
        let response: ResponseAPDU
        do { response = try ResponseAPDU(bytes: raw) } catch {
            let malformed = TransportError(.malformedResponse, error.message, underlying: error)
            throw refine(malformed, deadline: deadline)
        }
        // A card answers at most Ne bytes (ISO 7816-4 §5.1); more is a card to stop trusting.
        if let ne = command.le, response.data.count > ne {
            throw TransportError(
                .malformedResponse, "The card answered \(response.data.count) bytes where at most \(ne) were asked for.")
        }
        return response
    }

    /// A failed or empty exchange is often a card leaving the field before pcscd's presence poll
    /// has noticed: watch `SCardStatus` for up to a second, never more than ``afterDeadline``
    /// past the caller's `deadline`, and report a removal as such.
    private func refine(_ error: TransportError, deadline callerDeadline: Deadline?) -> TransportError {
        guard error.code == .deviceError || error.code == .malformedResponse else { return error }
        var deadline = ContinuousClock.now + .seconds(1)
        if let callerDeadline { deadline = min(deadline, callerDeadline.instant + Self.afterDeadline) }
        let pause = CancellationSignal()
        repeat {
            do {
                let state = try context.status(card).state
                if state & UInt32(SCARD_PRESENT) == 0 {
                    return TransportError(
                        .noDevice, "The card was removed from the reader.", underlying: error)
                }
            } catch let status {
                if status.code == .noDevice { return status }
                return error
            }
        } while !pause.wait(.milliseconds(50)) && ContinuousClock.now < deadline
        return error
    }
}

/// Whether a wait for the card ended, shared with the task that would report it as busy, and
/// whether that task did.
private final class Finished: Sendable {
    let value = Mutex(false)
    let told = Mutex(false)
}

/// One wait for `SCardBeginTransaction`, shared by the job that waits on the context's thread
/// and the caller that may give up on it: whichever comes first decides, so a card the job gets
/// after the caller left is let go at once, and one it got just before is kept.
private final class CardWait: Sendable {
    enum State: Sendable {
        case waiting
        /// The job got the card (`began`: by its own transaction, not an exclusive hold).
        case got(began: Bool)
        case failed
        case gaveUp
    }
    private let state = Mutex(State.waiting)

    /// The job got the card; false when the caller had already given up.
    func claim(began: Bool) -> Bool {
        state.withLock { s in
            if case .gaveUp = s { return false }
            s = .got(began: began)
            return true
        }
    }

    /// The job's wait failed; true when the caller had already given up (nobody hears of it).
    func fail() -> Bool {
        state.withLock { s in
            if case .gaveUp = s { return true }
            s = .failed
            return false
        }
    }

    /// The caller gives up; returns what the job had reached before.
    func giveUp() -> State {
        state.withLock { s in
            let before = s
            if case .waiting = s { s = .gaveUp }
            return before
        }
    }
}

extension TransportError {
    /// Whether pcsc-lite said another application reset the card (`SCARD_W_RESET_CARD`).
    fileprivate var isCardReset: Bool { (underlying as? PCSCCallError)?.returnCode == .resetCard }
    /// Whether pcsc-lite said the card is not powered (`SCARD_W_UNPOWERED_CARD`).
    fileprivate var isCardUnpowered: Bool { (underlying as? PCSCCallError)?.returnCode == .unpoweredCard }
}

extension CommandAPDU {
    fileprivate var withShortLe: CommandAPDU {
        var copy = self
        copy.le = min(le ?? CommandAPDU.maxShortLe, CommandAPDU.maxShortLe)
        return copy
    }
}

