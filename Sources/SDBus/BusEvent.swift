/// A method call received on the exported object; answer it once with
/// ``BusConnection/reply(to:_:)`` or ``BusConnection/replyError(to:name:message:)``.
public struct BusMethodCall: Sendable {
    /// The interface named by the call.
    public var interface: String
    /// The method.
    public var member: String
    /// The arguments (basic types only; calls with others are refused by the wrapper).
    public var arguments: [BusValue]
    /// The sender.
    public var caller: BusCaller
    /// The call's serial (cookie) in the sender's numbering.
    public var serial: UInt64
    let message: MessageReference
}

/// What the connection reports.
public enum BusEvent: Sendable {
    /// A method call on the exported object.
    case methodCall(BusMethodCall)
    /// A connection left the bus (NameOwnerChanged with no new owner for a unique name).
    case peerLeft(uniqueName: String)
    /// A signal matched by ``BusConnection/watchSignals(path:interface:)``.
    case signal(BusSignal)
}

/// A signal received by a client connection.
public struct BusSignal: Sendable {
    /// The sender's unique name, as the bus daemon stamped it.
    public var sender: String
    /// The interface.
    public var interface: String
    /// The member.
    public var member: String
    /// The arguments (basic types, `a{sv}` with basic values; signals with others are dropped).
    public var arguments: [BusValue]
}

/// The answer to a method call made with ``BusConnection/call(destination:path:interface:member:_:timeout:sent:)``.
public enum BusReply: Sendable {
    /// A method return with these values (basic types and `a{sv}` with basic values).
    case values([BusValue])
    /// A D-Bus error reply: its name and message.
    case error(name: String, message: String)
}
