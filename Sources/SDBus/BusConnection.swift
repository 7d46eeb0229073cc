import CSDBus
import _SecurityKeyInternals
import Glibc
import Synchronization

/// One connection to a message bus, owned by a dedicated thread that runs the sd-bus loop
/// (`sd_bus_process`, then `poll` on the bus fd and a wake-up eventfd): sd-bus is not
/// thread-safe and its calls block, so none of it runs on the cooperative pool. Other threads
/// hand it work (replies, signals) through a queue and the eventfd.
///
/// Exports one object path: method calls on it arrive as ``BusEvent/methodCall(_:)`` with the
/// sender's credentials; `org.freedesktop.DBus.Introspectable.Introspect` is answered with the
/// given XML, `org.freedesktop.DBus.Peer` by sd-bus itself.
public final class BusConnection: @unchecked Sendable {
    /// Method calls and departures, in arrival order; finishes when the connection closes.
    public let events: AsyncStream<BusEvent>
    /// This connection's unique name on the bus.
    public internal(set) var uniqueName = ""
    /// The longest string argument accepted; longer ones are refused before being copied.
    public let maximumStringBytes: Int

    let objectPath: String
    let introspection: String
    let continuation: AsyncStream<BusEvent>.Continuation
    let jobs = Mutex<(queue: [@Sendable (OpaquePointer) -> Void], stopping: Bool)>(([], false))
    let wakeFD: Int32
    /// Only the bus thread reads or writes these.
    var bus: OpaquePointer?
    var slots: [OpaquePointer] = []
    /// Calls sent and not yet answered, failed when the connection ends first.
    var pendingCalls: [ObjectIdentifier: PendingCall] = [:]

    private init(objectPath: String, introspection: String, maximumStringBytes: Int) throws(BusError) {
        self.objectPath = objectPath
        self.introspection = introspection
        self.maximumStringBytes = maximumStringBytes
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
        wakeFD = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard wakeFD >= 0 else {
            throw BusError(function: "eventfd", errno: errno, "Cannot create an eventfd.")
        }
    }

    /// Connects to `address`, exports `objectPath`, requests `name` (when given) and starts the
    /// bus thread.
    public static func open(
        address: BusAddress, name: String?, objectPath: String, introspection: String,
        maximumStringBytes: Int = 1 << 20
    ) async throws(BusError) -> BusConnection {
        let connection = try BusConnection(
            objectPath: objectPath, introspection: introspection, maximumStringBytes: maximumStringBytes)
        let started: Result<Void, BusError> = await withCheckedContinuation { ready in
            let started = OSThread.detach(name: "sd-bus") {
                connection.threadMain(address: address, name: name) { ready.resume(returning: $0) }
            }
            if !started {
                ready.resume(
                    returning: .failure(BusError(function: "pthread_create", errno: EAGAIN, "Cannot start the bus thread.")))
            }
        }
        try started.get()
        return connection
    }

    /// Connects to `address` as a client only: no object exported, no name owned.
    public static func client(address: BusAddress) async throws(BusError) -> BusConnection {
        try await open(address: address, name: nil, objectPath: "", introspection: "")
    }

    /// Calls `member` and waits for the reply (`sd_bus_call_async`, with `timeout`); `sent` gets the
    /// call's serial on the bus thread before any message that follows it is processed. A reply
    /// of types the wrapper does not read is a ``BusError``, as is a connection that closes.
    public func call(
        destination: String, path: String, interface: String, member: String, _ values: [BusValue],
        timeout: Duration = .seconds(25), sent: @escaping @Sendable (UInt64) -> Void = { _ in }
    ) async throws(BusError) -> BusReply {
        let microseconds =
            UInt64(max(0, timeout.components.seconds)) * 1_000_000
            + UInt64(max(0, timeout.components.attoseconds / 1_000_000_000_000))
        let result: Result<BusReply, BusError> = await withCheckedContinuation { continuation in
            let pending = PendingCall(continuation, connection: self)
            let accepted = enqueue { bus in
                func failed(_ function: String, _ r: Int32) {
                    pending.resolve(
                        .failure(
                            BusError(
                                function: function, errno: -r,
                                "Cannot call \(member): \(String(cString: strerror(-r))).")))
                }
                var message: OpaquePointer?
                var r = sd_bus_message_new_method_call(
                    bus, &message, destination, path, interface, member)
                guard r >= 0, let message else { return failed("sd_bus_message_new_method_call", r) }
                defer { sd_bus_message_unref(message) }
                for value in values where r >= 0 { r = Self.append(value, to: message) }
                guard r >= 0 else { return failed("sd_bus_message_append", r) }
                let box = Unmanaged.passRetained(pending)
                r = sd_bus_call_async(
                    bus, nil, message,
                    { reply, userdata, _ in
                        guard let userdata else { return 0 }
                        let pending = Unmanaged<PendingCall>.fromOpaque(userdata).takeRetainedValue()
                        guard let reply else {
                            pending.resolve(
                                .failure(BusError(function: "sd_bus_call_async", errno: EIO, "No reply."))
                            )
                            return 0
                        }
                        pending.resolve(pending.connection.readReply(reply))
                        return 0
                    }, box.toOpaque(), microseconds)
                guard r >= 0 else {
                    box.release()
                    return failed("sd_bus_call_async", r)
                }
                self.pendingCalls[ObjectIdentifier(pending)] = pending
                var serial: UInt64 = 0
                _ = sd_bus_message_get_cookie(message, &serial)
                sent(serial)
            }
            if !accepted {
                continuation.resume(
                    returning: .failure(
                        BusError(function: "sd_bus_call_async", errno: ENOTCONN, "The connection is closed."))
                )
            }
        }
        return try result.get()
    }

    /// Reports the signals of `interface` sent from `path` as ``BusEvent/signal(_:)``
    /// (`sd_bus_match_signal`); signals addressed to this connection alone arrive too.
    public func watchSignals(path: String, interface: String) async throws(BusError) {
        let result: Result<Void, BusError> = await withCheckedContinuation { continuation in
            let accepted = enqueue { bus in
                let userdata = Unmanaged.passUnretained(self).toOpaque()
                var slot: OpaquePointer?
                let r = sd_bus_match_signal(
                    bus, &slot, nil, path, interface, nil,
                    { message, userdata, _ in
                        guard let message, let userdata else { return 0 }
                        Unmanaged<BusConnection>.fromOpaque(userdata).takeUnretainedValue()
                            .receivedSignal(
                                message)
                        return 0
                    }, userdata)
                if r >= 0, let slot { self.slots.append(slot) }
                continuation.resume(
                    returning: r >= 0
                        ? .success(())
                        : .failure(
                            BusError(
                                function: "sd_bus_match_signal", errno: -r,
                                "Cannot watch \(interface) signals.")))
            }
            if !accepted {
                continuation.resume(
                    returning: .failure(
                        BusError(
                            function: "sd_bus_match_signal", errno: ENOTCONN, "The connection is closed.")))
            }
        }
        try result.get()
    }

    /// Runs `job` on the bus thread with the bus; false (and `job` dropped) once the connection
    /// is closing.
    @discardableResult
    func enqueue(_ job: @escaping @Sendable (OpaquePointer) -> Void) -> Bool {
        let accepted = jobs.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.queue.append(job)
            return true
        }
        if accepted { wake() }
        return accepted
    }

    func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }

    /// Answers `call` with `values`.
    public func reply(to call: BusMethodCall, _ values: [BusValue]) {
        let reference = call.message
        enqueue { _ in
            guard let message = reference.message else { return }
            var reply: OpaquePointer?
            guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return }
            defer { sd_bus_message_unref(reply) }
            for value in values where Self.append(value, to: reply) < 0 { return }
            _ = sd_bus_send(nil, reply, nil)
        }
    }

    /// Answers `call` with the D-Bus error `name` and `message` (`sd_bus_reply_method_error`).
    public func replyError(to call: BusMethodCall, name: String, message: String) {
        let reference = call.message
        enqueue { _ in
            guard let call = reference.message else { return }
            Self.replyError(call, name: name, message: message)
        }
    }

    static func replyError(_ call: OpaquePointer, name: String, message: String) {
        name.withCString { name in
            message.withCString { text in
                var error = sd_bus_error(name: name, message: text, _need_free: 0)
                _ = sd_bus_reply_method_error(call, &error)
            }
        }
    }

    /// Emits signal `member` of `interface` from `path`, to `destination` only when given
    /// (a unicast signal) or to every subscriber.
    public func emitSignal(
        path: String, interface: String, member: String, destination: String?, _ values: [BusValue]
    ) {
        enqueue { bus in
            var signal: OpaquePointer?
            guard sd_bus_message_new_signal(bus, &signal, path, interface, member) >= 0, let signal else {
                return
            }
            defer { sd_bus_message_unref(signal) }
            if let destination, sd_bus_message_set_destination(signal, destination) < 0 { return }
            for value in values where Self.append(value, to: signal) < 0 { return }
            _ = sd_bus_send(bus, signal, nil)
        }
    }

    /// Flushes what is queued, closes the connection and ends the thread and ``events``.
    public func close() {
        jobs.withLock { $0.stopping = true }
        wake()
    }
}
