import CBOR

/// One CTAP2 command with its parameters and the type its reply decodes to (CTAP 2.1 §6
/// "Authenticator API"); ``CTAP2Session/send(_:deadline:keepalive:)`` sends any of them.
///
/// A new command is a type conforming to this protocol in its own folder; the session needs
/// no new method for it.
public protocol CTAP2Request: Sendable {
    /// What a successful reply decodes to.
    associatedtype Response: Sendable

    /// The command byte.
    var command: CTAP2Command { get }
    /// The parameter map, or nil for a command that takes none.
    var parameters: CBORMap? { get }
    /// Refuses a request that cannot be sent as built; by default every request can.
    func validate() throws(CTAP2Error)
    /// Decodes the body of a successful reply (after the zero status byte).
    func decodeResponse(_ body: [UInt8]) throws(CTAP2Error) -> Response
    /// What a status the key answered this command with means: the statuses only this command
    /// returns get their code and sentence here, in the command's folder, on top of the
    /// generic ``CTAP2Error/classify(_:)``. By default the error comes back unchanged.
    func explain(_ error: CTAP2Error) -> CTAP2Error
}

/// A reply type decoded from the CBOR body of a successful reply.
public protocol CTAP2Response: Sendable {
    /// Parses the body of a successful reply (after the zero status byte).
    init(cbor bytes: [UInt8]) throws(CTAP2Error)
}

extension CTAP2Request {
    /// Every request can be sent unless it says otherwise.
    public func validate() throws(CTAP2Error) {}

    /// No statuses of its own unless the command says otherwise.
    public func explain(_ error: CTAP2Error) -> CTAP2Error { error }

    /// The message to send: the command byte followed by the canonical CBOR parameters.
    public func encoded() throws(CTAP2Error) -> [UInt8] {
        try validate()
        var message = [command.rawValue]
        if let parameters { message += CBOREncoder.encode(.map(parameters)) }
        return message
    }
}

extension CTAP2Request where Response: CTAP2Response {
    /// Decodes the reply with the response type's own parser.
    public func decodeResponse(_ body: [UInt8]) throws(CTAP2Error) -> Response {
        try Response(cbor: body)
    }
}

/// The reply of a command that answers with its status alone (reset, selection).
public struct EmptyResponse: CTAP2Response, Hashable {
    /// Accepts any body: such commands define none, and a stray byte is no reason to fail
    /// a command that has already succeeded.
    public init(cbor bytes: [UInt8]) {}
}

/// Any command with an optional parameter map, answered with the raw CBOR body: for commands
/// that have no request type of their own yet.
public struct UntypedRequest: CTAP2Request, Hashable {
    /// The command byte.
    public var command: CTAP2Command
    /// The parameter map, if any.
    public var parameters: CBORMap?

    /// A request for `command` with `parameters`.
    public init(_ command: CTAP2Command, parameters: CBORMap? = nil) {
        self.command = command
        self.parameters = parameters
    }

    /// The body as sent (empty when the authenticator sent none).
    public func decodeResponse(_ body: [UInt8]) -> [UInt8] { body }
}
