import Logging
import Transport

/// Serves a ``CTAPMessageHandler`` as a contactless FIDO card to vsmartcard's vpcd reader driver
/// (CTAP 2.1 §11.3 over ISO/IEC 7816-4), so pcscd and every PC/SC client see a real card.
///
/// vpcd listens; the card connects. Each message is a 2-byte big-endian length then the payload;
/// a one-byte payload is a control code (0 power off, 1 power on, 2 reset, 4 get ATR), anything
/// else an APDU to answer. ``run()`` belongs to the caller: it reconnects when vpcd restarts and
/// returns when its task is cancelled (the card is then "removed").
public struct VPCDCardServer: Sendable {
    /// Where to connect and how the card behaves.
    public struct Configuration: Sendable {
        /// vpcd's host.
        public var host: String
        /// vpcd's port (35963 is the first reader of the stock configuration, +1 the second).
        public var port: UInt16
        /// Answer `6700` to extended APDUs, forcing the reader side to chain.
        public var shortAPDUsOnly: Bool
        /// The ATR the card reports: a PC/SC contactless ISO 14443-4 ATR with no historical bytes.
        public var atr: [UInt8]
        /// The data of the SELECT answer: `U2F_V2` (U2F and maybe CTAP2) or `FIDO_2_0`.
        public var selectAnswer: [UInt8]
        /// How long NFCCTAP_MSG waits for the handler before answering `9100`.
        public var immediateReplyWindow: Duration
        /// Pause before trying to reach vpcd again.
        public var reconnectDelay: Duration
        /// Whether NFCCTAP_MSG is served; false makes a U2F-only card, which answers it `6D00`.
        public var acceptsCTAP2 = true
        /// A misbehaviour to show on purpose (``VirtualKeyFault/silentAfterSelect``); nil for none.
        public var fault: VirtualKeyFault?

        /// Creates a configuration.
        public init(
            host: String = "127.0.0.1", port: UInt16 = 35963, shortAPDUsOnly: Bool = false,
            atr: [UInt8] = [0x3B, 0x80, 0x80, 0x01, 0x01], selectAnswer: [UInt8] = Array("U2F_V2".utf8),
            immediateReplyWindow: Duration = .milliseconds(50), reconnectDelay: Duration = .milliseconds(250)
        ) {
            self.host = host
            self.port = port
            self.shortAPDUsOnly = shortAPDUsOnly
            self.atr = atr
            self.selectAnswer = selectAnswer
            self.immediateReplyWindow = immediateReplyWindow
            self.reconnectDelay = reconnectDelay
        }
    }

    private let handler: any CTAPMessageHandler
    /// How this server connects and behaves.
    public let configuration: Configuration
    private let logger: Logger

    /// Creates a server for `handler`.
    public init(
        handler: any CTAPMessageHandler, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "securitykey.vpcd")
    ) {
        self.handler = handler
        self.configuration = configuration
        self.logger = logger
    }

    /// Connects to vpcd and answers it until the task is cancelled, reconnecting whenever the
    /// connection drops. `onConnection` hears `false` once when vpcd cannot be reached (and
    /// again after each connection that ended), `true` at each connection.
    public func run(onConnection: @escaping @Sendable (Bool) -> Void = { _ in }) async {
        let thread = BlockingIOThread(name: "vpcd:\(configuration.port)", closedMessage: "The card server stopped.")
        defer { thread.shutdown() }
        let host = configuration.host, port = configuration.port
        let delay = configuration.reconnectDelay
        var warned = false
        while !Task.isCancelled {
            let socket: VPCDSocket
            do throws(TransportError) {
                socket = try await thread.runCancellable { (cancel) throws(TransportError) -> VPCDSocket in
                    var told = false
                    while true {
                        do { return try VPCDSocket.connect(host: host, port: port) } catch {
                            if !told { onConnection(false) }
                            told = true
                            if cancel.wait(delay) { throw TransportError(.cancelled, "The server was stopped.") }
                        }
                    }
                }
            } catch {
                if error.code != .cancelled, !warned {
                    logger.info("cannot reach vpcd", metadata: ["error": "\(error)"])
                    warned = true
                }
                continue
            }
            warned = false
            logger.debug("connected to vpcd", metadata: ["host": "\(host)", "port": "\(port)"])
            onConnection(true)
            await serve(socket, thread: thread)
            _ = try? await thread.run { () throws(TransportError) in socket.close() }
            if !Task.isCancelled {
                logger.info("vpcd connection ended; reconnecting", metadata: ["port": "\(port)"])
            }
        }
    }

    /// Answers one vpcd connection until it drops or the task is cancelled.
    private func serve(_ socket: VPCDSocket, thread: BlockingIOThread) async {
        let card = VPCDCard(handler: handler, configuration: configuration, logger: logger)
        let handler = handler
        await withDiscardingTaskGroup { group in
            defer { group.cancelAll() }
            while !Task.isCancelled {
                let message: [UInt8]?
                do throws(TransportError) {
                    message = try await thread.runCancellable { cancel throws(TransportError) in
                        try socket.readMessage(cancel: cancel)
                    }
                } catch {
                    if error.code != .cancelled {
                        logger.info("vpcd read failed", metadata: ["error": "\(error)"])
                    }
                    return
                }
                guard let message else { return }
                var reply: [UInt8]?
                switch await card.receive(message) {
                case .none:
                    reply = nil
                case .reply(let bytes):
                    reply = bytes
                case .start(let request, let payload):
                    group.addTask { await request.run(handler, message: payload) }
                    reply = await card.replyAfterStart(request)
                }
                guard let reply else { continue }
                do throws(TransportError) {
                    try await thread.runCancellable { _ throws(TransportError) in try socket.writeMessage(reply) }
                } catch {
                    if error.code != .cancelled {
                        logger.info("vpcd write failed", metadata: ["error": "\(error)"])
                    }
                    return
                }
            }
        }
    }
}
