import CBOR
import Logging
import Transport

/// A CTAP2 conversation with one authenticator over any ``AuthenticatorConnection``
/// (CTAP 2.1 §6 "Authenticator API").
///
/// Commands run one at a time, in the order they were called: the session is an actor and
/// additionally queues callers, so an `await` inside one transaction never lets another
/// interleave (over a connection that queues them itself, such as CTAPHID, that one queue is
/// used instead of a second). Every command is a ``CTAP2Request`` sent by ``send(_:deadline:keepalive:)``;
/// each has a deadline, forwards keepalive status to the caller, turns a non-zero status byte
/// into the ``CTAP2Error`` that ``CTAP2Error/classify(_:)`` names (carrying the
/// ``CTAPStatus``), and checks message sizes against the authenticator's maxMsgSize once
/// ``getInfo(deadline:)`` has been called.
///
/// Replies must be CTAP2 canonical CBOR (see ``ResponseDecoding``): a reply with non-shortest
/// lengths, map keys out of order or twice is refused as malformed.
public actor CTAP2Session {
    /// The connection the session talks over.
    public nonisolated let connection: any AuthenticatorConnection
    /// The timeout of each command when the call does not give one.
    public let defaultTimeout: Duration
    /// The last getInfo response, once ``getInfo(deadline:)`` has run.
    public private(set) var info: AuthenticatorInfo? {
        didSet { maxMessageSize = info?.maxMsgSize.map { Int(clamping: $0) } }
    }
    // The getInfo reply's maxMsgSize, kept apart so that each command reads one integer
    // instead of copying the whole getInfo reply out of ``info``.
    private var maxMessageSize: Int?

    private let logger: Logger
    /// Whether callers are queued here: not when the connection queues them itself, so that
    /// one exchange waits in one queue.
    private let queuesCallers: Bool
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// The request size limit before getInfo tells otherwise (CTAP 2.1 §6.4 maxMsgSize default).
    public static let defaultMaxMessageSize = 1024
    /// The reply size limit before getInfo tells otherwise.
    static let unknownReplyLimit = 1 << 16

    /// Creates a session over `connection`.
    public init(
        connection: any AuthenticatorConnection, defaultTimeout: Duration = .seconds(30),
        logger: Logger = Logger(label: "securitykey.ctap2")
    ) {
        self.connection = connection
        self.defaultTimeout = defaultTimeout
        self.logger = logger
        self.queuesCallers = !connection.serializesTransactions
    }

    /// Sends any ``CTAP2Request`` and decodes its reply: every command goes through here.
    ///
    /// A non-zero status comes back as a ``CTAP2Error`` classified by
    /// ``CTAP2Error/classify(_:)`` and then by the request's own ``CTAP2Request/explain(_:)``.
    /// A getInfo reply is also kept in ``info``, where it sets the size limits.
    public func send<Request: CTAP2Request>(
        _ request: Request, deadline: Deadline? = nil,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> Request.Response {
        let body: [UInt8]
        do throws(CTAP2Error) {
            body = try await transact(
                request.command, try request.encoded(), deadline: deadline, keepalive: keepalive)
        } catch where error.status != nil {
            throw request.explain(error)
        }
        let response = try request.decodeResponse(body)
        if Request.Response.self == AuthenticatorInfo.self, let info = response as? AuthenticatorInfo {
            self.info = info
        }
        return response
    }

    /// authenticatorGetInfo (§6.4); the result is kept in ``info`` and sets the size limits.
    public func getInfo(deadline: Deadline? = nil) async throws(CTAP2Error) -> AuthenticatorInfo {
        try await send(GetInfoRequest(), deadline: deadline)
    }

    /// authenticatorMakeCredential (§6.1).
    public func makeCredential(
        _ request: MakeCredentialRequest, deadline: Deadline? = nil,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> MakeCredentialResponse {
        try await send(request, deadline: deadline, keepalive: keepalive)
    }

    /// authenticatorGetAssertion (§6.2).
    public func getAssertion(
        _ request: GetAssertionRequest, deadline: Deadline? = nil,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> GetAssertionResponse {
        try await send(request, deadline: deadline, keepalive: keepalive)
    }

    /// authenticatorGetNextAssertion (§6.3): the next of `numberOfCredentials` assertions.
    public func getNextAssertion(deadline: Deadline? = nil) async throws(CTAP2Error) -> GetAssertionResponse {
        try await send(GetNextAssertionRequest(), deadline: deadline)
    }

    /// authenticatorReset (§6.6): erases every credential and the PIN. Needs a touch.
    public func reset(
        deadline: Deadline? = nil, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) {
        _ = try await send(ResetRequest(), deadline: deadline, keepalive: keepalive)
    }

    /// authenticatorSelection (§6.9): returns once the user touches this authenticator.
    public func selection(
        deadline: Deadline? = nil, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) {
        _ = try await send(SelectionRequest(), deadline: deadline, keepalive: keepalive)
    }

    /// Sends any CTAP2 command with an optional parameter map and returns the CBOR body of a
    /// successful reply (empty when the authenticator sent none): ``UntypedRequest`` through
    /// ``send(_:deadline:keepalive:)``, for commands without a request type of their own.
    public func send(
        _ command: CTAP2Command, parameters: CBORMap?, deadline: Deadline? = nil,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
    ) async throws(CTAP2Error) -> [UInt8] {
        try await send(
            UntypedRequest(command, parameters: parameters), deadline: deadline, keepalive: keepalive)
    }

    /// Sends one encoded message (`command`'s byte + CBOR) and returns the reply body after a
    /// zero status byte. `command` is the request's own, named in logs and errors.
    func transact(
        _ command: CTAP2Command, _ message: [UInt8], deadline: Deadline?,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(CTAP2Error) -> [UInt8] {
        let requestLimit = maxMessageSize ?? Self.defaultMaxMessageSize
        guard message.count <= requestLimit else {
            throw .messageTooLarge(
                "The \(command) request is \(message.count) bytes; the authenticator accepts at most \(requestLimit)."
            )
        }

        // The free case without a call to an async function (a frame and an executor check).
        if queuesCallers { if busy { await acquire() } else { busy = true } }
        defer { if queuesCallers { release() } }
        if Task.isCancelled {
            throw .cancelled("The \(command) request was cancelled before it was sent.")
        }

        logger.debug("CTAP2 request", metadata: ["command": "\(command)", "bytes": "\(message.count)"])
        let deadline = deadline ?? .after(defaultTimeout)
        let reply: [UInt8]
        do throws(TransportError) {
            reply = try await connection.transact(
                .cbor, payload: message, deadline: deadline, keepalive: keepalive)
        } catch {
            logger.debug(
                "CTAP2 transport failure", metadata: ["command": "\(command)", "code": "\(error.code)"])
            if error.code == .cancelled {
                throw .cancelled("The \(command) request was cancelled.", underlying: error)
            }
            throw .transport("The \(command) request failed: \(error.message)", underlying: error)
        }

        guard let statusByte = reply.first else {
            throw CTAP2Error.malformed("The authenticator answered \(command) with an empty message.")
        }
        let replyLimit = maxMessageSize ?? Self.unknownReplyLimit
        guard reply.count <= replyLimit else {
            throw .messageTooLarge(
                "The \(command) reply is \(reply.count) bytes, more than the authenticator's maxMsgSize of \(replyLimit)."
            )
        }
        let status = CTAPStatus(rawValue: statusByte)
        logger.debug("CTAP2 reply", metadata: ["command": "\(command)", "status": "\(status)"])
        guard status == .ok else { throw .authenticator(status) }
        // In place (the reply is ours alone): a copy would allocate a second buffer.
        var body = reply
        body.removeFirst()
        return body
    }

    func acquire() async {
        guard queuesCallers else { return }
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        guard queuesCallers else { return }
        if waiters.isEmpty {
            busy = false
        } else {
            // Ownership passes straight to the next caller in line.
            waiters.removeFirst().resume()
        }
    }
}
