/// The one seam between the CTAP command layer and a wire.
///
/// A connection carries opaque bytes: it never parses CBOR or CTAP status codes.
/// The virtual authenticator, a hidapi device, a PC/SC card and recorded wire data
/// all plug in here.
public protocol AuthenticatorConnection: Sendable {
    /// What this connection talks to.
    var descriptor: DeviceDescriptor { get }

    /// What the transport can carry besides CTAP2 messages.
    var capabilities: TransportCapabilities { get }

    /// Sends one message and returns the authenticator's reply.
    ///
    /// - For ``TransportCommand/cbor`` the payload is a CTAP2 command byte followed by its CBOR
    ///   parameters, and the reply is a CTAP2 status byte followed by CBOR.
    /// - For ``TransportCommand/u2f`` the payload is a CTAP1/U2F request APDU and the reply is the
    ///   response data followed by the two status-word bytes.
    ///
    /// Implementations honour task cancellation (sending the transport's cancel) and throw
    /// ``TransportError`` with code ``TransportError/Code/timeout`` once `deadline` passes.
    /// `keepalive` is called, from any thread, each time the authenticator reports that it is
    /// still working or waiting for user presence.
    func transact(
        _ command: TransportCommand,
        payload: [UInt8],
        deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8]

    /// Asks the device to identify itself to the user (blink), where the transport can.
    func wink() async throws(TransportError)

    /// Releases the device; later calls fail with ``TransportError/Code/closed``.
    func close() async

    /// The executor of the connection's own I/O thread, when a caller may run its operations
    /// there with `withTaskExecutorPreference`: the connection's blocking calls then run in
    /// place instead of costing a hand-off to that thread and a wake-up back on the pool per
    /// operation. Nil (the default) when the connection has no such thread, or when running on
    /// it could defeat a deadline (a PC/SC call nothing interrupts).
    var preferredTaskExecutor: (any TaskExecutor)? { get }

    /// Whether the connection itself runs one ``transact(_:payload:deadline:keepalive:)`` at a
    /// time, in the order they were called, so that a layer above (a CTAP2 session) need not
    /// queue its callers a second time. False (the default) makes such a layer queue them.
    var serializesTransactions: Bool { get }

    /// Holds the device for this connection alone until the matching ``endExclusiveAccess()``,
    /// waiting at most until `deadline` (then `busy`) while another application holds it, and
    /// ending the wait with `cancelled` when the calling task is cancelled.
    ///
    /// Calls nest: only the outermost pair takes and lets go of the device, and the
    /// per-exchange hold ``transact(_:payload:deadline:keepalive:)`` takes on its own is
    /// skipped meanwhile. Use ``withExclusiveAccess(deadline:mapError:_:)`` rather than the pair.
    /// The default does nothing: a hidraw node is already held (`flock`) for as long as it is
    /// open, and UDP and in-process keys have no other user to keep out.
    func beginExclusiveAccess(deadline: Deadline) async throws(TransportError)

    /// Ends one ``beginExclusiveAccess(deadline:)``; the outermost lets the device go.
    func endExclusiveAccess() async
}

extension AuthenticatorConnection {
    /// Sends one message with a deadline `timeout` from now and no keepalive observer.
    public func transact(
        _ command: TransportCommand,
        payload: [UInt8],
        timeout: Duration = .seconds(30)
    ) async throws(TransportError) -> [UInt8] {
        try await transact(
            command, payload: payload, deadline: .after(timeout), keepalive: { _ in })
    }

    /// Default: the connection does not queue its callers.
    public var serializesTransactions: Bool { false }

    /// Default: no thread to run on.
    public var preferredTaskExecutor: (any TaskExecutor)? { nil }

    /// Default: the device is held for as long as the connection is open, or nobody else uses it.
    public func beginExclusiveAccess(deadline: Deadline) async throws(TransportError) {}

    /// Default: nothing to let go of.
    public func endExclusiveAccess() async {}

    /// Runs `body` with the device held for this connection alone (a PC/SC transaction across
    /// every exchange `body` makes): another application's commands cannot come between them,
    /// so a pinUvAuthToken obtained in `body` is still valid for the command that uses it.
    ///
    /// Waiting for the device ends at `deadline` or on cancellation with a ``TransportError``,
    /// which `mapError` turns into the caller's error type. Do not wait for the user (a PIN
    /// prompt) inside `body`: every other application on the device waits as long.
    public func withExclusiveAccess<T, Failure: Error>(
        deadline: Deadline, isolation: isolated (any Actor)? = #isolation,
        mapError: (TransportError) -> Failure, _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        do { try await beginExclusiveAccess(deadline: deadline) } catch { throw mapError(error) }
        do {
            let result = try await body()
            await endExclusiveAccess()
            return result
        } catch {
            await endExclusiveAccess()
            throw error
        }
    }

    /// Default: the transport cannot wink.
    public func wink() async throws(TransportError) {
        throw TransportError(.notSupported, "This transport cannot make the key blink.")
    }
}

/// The kind of message a connection carries (CTAP 2.1 §11: CTAPHID_CBOR vs CTAPHID_MSG,
/// NFCCTAP_MSG vs a plain U2F APDU).
public struct TransportCommand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A CTAP2 command: command byte + CBOR.
    public static let cbor = TransportCommand(rawValue: 0x10)
    /// A CTAP1/U2F APDU.
    public static let u2f = TransportCommand(rawValue: 0x03)

    public var description: String {
        switch self {
        case .cbor: "cbor"
        case .u2f: "u2f"
        default: "command(0x\(String(rawValue, radix: 16)))"
        }
    }
}

/// What an authenticator reports while it works (CTAPHID KEEPALIVE status, or NFC 9100 polling).
public struct KeepaliveStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The authenticator is still processing the request.
    public static let processing = KeepaliveStatus(rawValue: 1)
    /// The authenticator is waiting for user presence (a touch).
    public static let userPresenceNeeded = KeepaliveStatus(rawValue: 2)

    public var description: String {
        switch self {
        case .processing: "processing"
        case .userPresenceNeeded: "user presence needed"
        default: "status(\(rawValue))"
        }
    }
}

/// Optional abilities of a transport (CTAPHID INIT capability flags, or what a card answered).
public struct TransportCapabilities: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The device can blink on request (CTAPHID CAPABILITY_WINK).
    public static let wink = TransportCapabilities(rawValue: 0x01)
    /// The device speaks CTAP2 (CTAPHID CAPABILITY_CBOR).
    public static let cbor = TransportCapabilities(rawValue: 0x04)
    /// The device does not speak CTAP1/U2F (CTAPHID CAPABILITY_NMSG).
    public static let noU2F = TransportCapabilities(rawValue: 0x08)
}
