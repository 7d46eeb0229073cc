import CSDBus
import Foundation
import Glibc
import Synchronization

/// Which bus to connect to.
public enum BusAddress: Hashable, Sendable {
    /// The user's session bus (`sd_bus_open_user`).
    case session
    /// The system bus (`sd_bus_open_system`).
    case system
    /// A bus at this D-Bus address (`unix:path=...`), as a client of its message bus.
    case address(String)
}

/// Who sent a method call, as the bus daemon vouches for it (`sd_bus_query_sender_creds`):
/// the uid and pid come from the kernel through the bus; the executable is read from
/// `/proc/PID/exe` and can race with the process exiting and its pid being reused.
public struct BusCaller: Hashable, Sendable {
    /// The caller's unique connection name (`:1.42`).
    public var uniqueName: String
    /// The caller's effective uid, when the bus told it.
    public var uid: UInt32?
    /// The caller's pid, when the bus told it.
    public var pid: Int32?
    /// The caller's executable, when it could be read.
    public var executable: String?
    /// The caller's effective gid and supplementary gids, as far as they could be read.
    public var groups: [UInt32]
    /// The caller's login session as systemd-logind records it (sd-login).
    public var login: LoginSeat

    /// Creates a caller description.
    public init(
        uniqueName: String, uid: UInt32?, pid: Int32?, executable: String?, groups: [UInt32] = [],
        login: LoginSeat = .unknown
    ) {
        self.uniqueName = uniqueName
        self.uid = uid
        self.pid = pid
        self.executable = executable
        self.groups = groups
        self.login = login
    }
}

/// Where a caller sits, in systemd-logind's terms: whether its process belongs to a session that
/// is on a seat and is the seat's active one (`sd_pid_get_session`, `sd_session_is_active`,
/// `sd_session_get_seat`).
public enum LoginSeat: Hashable, Sendable {
    /// The process is in the active session of `seat`.
    case active(session: String, seat: String)
    /// The process is in a session on `seat` that is not in the foreground.
    case inactive(session: String, seat: String)
    /// The process is in a session without a seat (SSH, a cron job).
    case noSeat(session: String)
    /// The process is in no login session (a system service, or no logind on this machine).
    case noSession
    /// The bus did not tell the caller's pid.
    case unknown

    /// The login seat of process `pid`, read from its cgroup and logind's state in /run (no bus
    /// call; the files can race with the session ending, as any pid-based check can).
    public static func of(pid: Int32) -> LoginSeat {
        var session: UnsafeMutablePointer<CChar>?
        guard sd_pid_get_session(pid, &session) >= 0, let session else { return .noSession }
        defer { free(session) }
        let name = String(cString: session)
        var seat: UnsafeMutablePointer<CChar>?
        guard sd_session_get_seat(name, &seat) >= 0, let seat else { return .noSeat(session: name) }
        defer { free(seat) }
        let seatName = String(cString: seat)
        return sd_session_is_active(name) > 0
            ? .active(session: name, seat: seatName) : .inactive(session: name, seat: seatName)
    }
}

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
}

/// A retained `sd_bus_message`, released on the bus thread (sd-bus objects are not thread-safe).
final class MessageReference: @unchecked Sendable {
    let pointer: UInt
    let connection: BusConnection

    init(_ message: OpaquePointer, connection: BusConnection) {
        sd_bus_message_ref(message)
        pointer = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(message)))
        self.connection = connection
    }

    var message: OpaquePointer? { OpaquePointer(bitPattern: pointer) }

    deinit {
        let pointer = self.pointer
        connection.enqueue { _ in
            if let message = OpaquePointer(bitPattern: pointer) { sd_bus_message_unref(message) }
        }
    }
}

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
    public private(set) var uniqueName = ""
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
            let thread = Thread {
                connection.threadMain(address: address, name: name) { ready.resume(returning: $0) }
            }
            thread.name = "sd-bus"
            thread.start()
        }
        try started.get()
        return connection
    }

    /// Runs `job` on the bus thread with the bus (dropped once the connection is closed).
    func enqueue(_ job: @escaping @Sendable (OpaquePointer) -> Void) {
        let accepted = jobs.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.queue.append(job)
            return true
        }
        if accepted { wake() }
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

// MARK: The bus thread

extension BusConnection {
    func threadMain(address: BusAddress, name: String?, ready: (Result<Void, BusError>) -> Void) {
        do throws(BusError) {
            try connect(address: address, name: name)
        } catch {
            if let bus { sd_bus_flush_close_unref(bus) }
            bus = nil
            Glibc.close(wakeFD)
            continuation.finish()
            ready(.failure(error))
            return
        }
        ready(.success(()))
        guard let bus else { return }
        loop(bus)
        for slot in slots { sd_bus_slot_unref(slot) }
        // Jobs still queued (replies to calls in flight) are sent before the connection closes.
        let remaining = jobs.withLock { state in
            defer { state.queue = [] }
            return state.queue
        }
        for job in remaining { job(bus) }
        sd_bus_flush_close_unref(bus)
        self.bus = nil
        Glibc.close(wakeFD)
        continuation.finish()
    }

    /// One wrapper per sd-bus call that can fail: a negative return becomes a ``BusError``.
    @discardableResult
    static func check(_ result: Int32, _ function: String, _ what: String) throws(BusError) -> Int32 {
        guard result >= 0 else {
            throw BusError(
                function: function, errno: -result, "\(what): \(String(cString: strerror(-result))).")
        }
        return result
    }

    func connect(address: BusAddress, name: String?) throws(BusError) {
        var opened: OpaquePointer?
        switch address {
        case .session:
            try Self.check(sd_bus_open_user(&opened), "sd_bus_open_user", "Cannot reach the session bus")
        case .system:
            try Self.check(sd_bus_open_system(&opened), "sd_bus_open_system", "Cannot reach the system bus")
        case .address(let text):
            try Self.check(sd_bus_new(&opened), "sd_bus_new", "Cannot create a bus connection")
            bus = opened
            try Self.check(
                sd_bus_set_address(opened, text), "sd_bus_set_address", "The bus address \(text) is invalid")
            try Self.check(
                sd_bus_set_bus_client(opened, 1), "sd_bus_set_bus_client", "Cannot configure the connection")
            try Self.check(sd_bus_start(opened), "sd_bus_start", "Cannot connect to the bus at \(text)")
        }
        guard let opened else { throw BusError(function: "sd_bus_open", errno: EINVAL, "No bus connection.") }
        bus = opened
        var unique: UnsafePointer<CChar>?
        try Self.check(
            sd_bus_get_unique_name(opened, &unique), "sd_bus_get_unique_name", "The bus gave no name")
        uniqueName = unique.map { String(cString: $0) } ?? ""

        let userdata = Unmanaged.passUnretained(self).toOpaque()
        var slot: OpaquePointer?
        try Self.check(
            sd_bus_add_object(
                opened, &slot, objectPath,
                { message, userdata, _ in
                    guard let message, let userdata else { return 0 }
                    return Unmanaged<BusConnection>.fromOpaque(userdata).takeUnretainedValue().received(
                        message)
                }, userdata), "sd_bus_add_object", "Cannot export \(objectPath)")
        if let slot { slots.append(slot) }
        slot = nil
        try Self.check(
            sd_bus_match_signal(
                opened, &slot, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "NameOwnerChanged",
                { message, userdata, _ in
                    guard let message, let userdata else { return 0 }
                    Unmanaged<BusConnection>.fromOpaque(userdata).takeUnretainedValue().nameOwnerChanged(
                        message)
                    return 0
                }, userdata), "sd_bus_match_signal", "Cannot watch NameOwnerChanged")
        if let slot { slots.append(slot) }
        if let name {
            try Self.check(
                sd_bus_request_name(opened, name, 0), "sd_bus_request_name", "Cannot own the name \(name)")
        }
    }

    func loop(_ bus: OpaquePointer) {
        while true {
            let (work, stopping) = jobs.withLock { state in
                defer { state.queue = [] }
                return (state.queue, state.stopping)
            }
            for job in work { job(bus) }
            if stopping { return }
            var processed: Int32
            repeat { processed = sd_bus_process(bus, nil) } while processed > 0
            if processed < 0 { return }  // the bus went away (ECONNRESET, ENOTCONN)
            if jobs.withLock({ !$0.queue.isEmpty || $0.stopping }) { continue }
            var fds = [
                pollfd(
                    fd: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: sd_bus_get_events(bus)),
                    revents: 0),
                pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
            ]
            var timeout: Int32 = -1
            var until: UInt64 = 0
            if sd_bus_get_timeout(bus, &until) >= 0, until != UInt64.max {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
                timeout =
                    until <= nowMicroseconds ? 0 : Int32(min((until - nowMicroseconds + 999) / 1000, 60_000))
            }
            _ = poll(&fds, 2, timeout)
            if fds[1].revents != 0 {
                var value: UInt64 = 0
                _ = Glibc.read(wakeFD, &value, 8)
            }
        }
    }

    /// A message to the exported object: Introspect is answered here, other method calls are
    /// reported with their sender's credentials.
    func received(_ message: OpaquePointer) -> Int32 {
        guard sd_bus_message_is_method_call(message, nil, nil) > 0 else { return 0 }
        let interface = sd_bus_message_get_interface(message).map { String(cString: $0) } ?? ""
        let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        if interface == "org.freedesktop.DBus.Introspectable", member == "Introspect" {
            var reply: OpaquePointer?
            if sd_bus_message_new_method_return(message, &reply) >= 0, let reply {
                _ = Self.append(.string(introspection), to: reply)
                _ = sd_bus_send(nil, reply, nil)
                sd_bus_message_unref(reply)
            }
            return 1
        }
        guard let arguments = readArguments(message) else {
            Self.replyError(
                message, name: "org.freedesktop.DBus.Error.InvalidArgs",
                message: "Arguments must be of basic types and strings at most \(maximumStringBytes) bytes.")
            return 1
        }
        var serial: UInt64 = 0
        _ = sd_bus_message_get_cookie(message, &serial)
        let call = BusMethodCall(
            interface: interface, member: member, arguments: arguments, caller: Self.caller(of: message),
            serial: serial, message: MessageReference(message, connection: self))
        continuation.yield(.methodCall(call))
        return 1
    }

    /// The sender's uid, pid and executable, asked of the bus daemon (a blocking call, made here
    /// on the bus thread).
    static func caller(of message: OpaquePointer) -> BusCaller {
        let sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
        var creds: OpaquePointer?
        var mask: UInt64 = UInt64(SD_BUS_CREDS_EUID)
        mask |= UInt64(SD_BUS_CREDS_UID)
        mask |= UInt64(SD_BUS_CREDS_PID)
        mask |= UInt64(SD_BUS_CREDS_EXE)
        mask |= UInt64(SD_BUS_CREDS_EGID)
        mask |= UInt64(SD_BUS_CREDS_SUPPLEMENTARY_GIDS)
        mask |= UInt64(SD_BUS_CREDS_AUGMENT)
        guard sd_bus_query_sender_creds(message, mask, &creds) >= 0, let creds else {
            return BusCaller(uniqueName: sender, uid: nil, pid: nil, executable: nil)
        }
        defer { sd_bus_creds_unref(creds) }
        var uid: uid_t = 0
        var pid: pid_t = 0
        var exe: UnsafePointer<CChar>?
        let hasUID = sd_bus_creds_get_euid(creds, &uid) >= 0 || sd_bus_creds_get_uid(creds, &uid) >= 0
        let hasPID = sd_bus_creds_get_pid(creds, &pid) >= 0
        let hasExe = sd_bus_creds_get_exe(creds, &exe) >= 0
        var groups: [UInt32] = []
        var gid: gid_t = 0
        if sd_bus_creds_get_egid(creds, &gid) >= 0 { groups.append(gid) }
        var supplementary: UnsafePointer<gid_t>?
        let count = sd_bus_creds_get_supplementary_gids(creds, &supplementary)
        if count > 0, let supplementary {
            groups += UnsafeBufferPointer(start: supplementary, count: Int(min(count, 65536)))
        }
        return BusCaller(
            uniqueName: sender, uid: hasUID ? uid : nil, pid: hasPID ? pid : nil,
            executable: hasExe ? exe.map { String(cString: $0) } : nil, groups: groups,
            login: hasPID ? LoginSeat.of(pid: pid) : .unknown)
    }

    /// Reads basic-typed arguments; nil when one is of another type or a string is too long.
    func readArguments(_ message: OpaquePointer) -> [BusValue]? {
        var values: [BusValue] = []
        while values.count < 16 {
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            let more = sd_bus_message_peek_type(message, &type, &contents)
            if more == 0 { return values }
            guard more > 0 else { return nil }
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "s"), UInt8(ascii: "o"):
                var text: UnsafePointer<CChar>?
                guard sd_bus_message_read_basic(message, type, &text) >= 0, let text else { return nil }
                guard strnlen(text, maximumStringBytes + 1) <= maximumStringBytes else { return nil }
                let string = String(cString: text)
                values.append(type == CChar(UInt8(ascii: "s")) ? .string(string) : .objectPath(string))
            case UInt8(ascii: "b"):
                var flag: Int32 = 0
                guard sd_bus_message_read_basic(message, type, &flag) >= 0 else { return nil }
                values.append(.bool(flag != 0))
            case UInt8(ascii: "i"):
                var number: Int32 = 0
                guard sd_bus_message_read_basic(message, type, &number) >= 0 else { return nil }
                values.append(.int32(number))
            case UInt8(ascii: "u"):
                var number: UInt32 = 0
                guard sd_bus_message_read_basic(message, type, &number) >= 0 else { return nil }
                values.append(.uint32(number))
            case UInt8(ascii: "x"):
                var number: Int64 = 0
                guard sd_bus_message_read_basic(message, type, &number) >= 0 else { return nil }
                values.append(.int64(number))
            case UInt8(ascii: "t"):
                var number: UInt64 = 0
                guard sd_bus_message_read_basic(message, type, &number) >= 0 else { return nil }
                values.append(.uint64(number))
            default: return nil
            }
        }
        return nil
    }

    func nameOwnerChanged(_ message: OpaquePointer) {
        var strings: [String] = []
        for _ in 0..<3 {
            var text: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &text) >= 0, let text else {
                return
            }
            strings.append(String(cString: text))
        }
        if strings[0].hasPrefix(":"), strings[2].isEmpty {
            continuation.yield(.peerLeft(uniqueName: strings[0]))
        }
    }

    /// Appends `value` to `message`; a negative errno on failure.
    static func append(_ value: BusValue, to message: OpaquePointer) -> Int32 {
        func basic(_ type: UInt8, _ pointer: UnsafeRawPointer) -> Int32 {
            sd_bus_message_append_basic(message, CChar(bitPattern: type), pointer)
        }
        switch value {
        case .string(let s): return s.withCString { basic(UInt8(ascii: "s"), $0) }
        case .objectPath(let s): return s.withCString { basic(UInt8(ascii: "o"), $0) }
        case .bool(let b):
            var flag: Int32 = b ? 1 : 0
            return basic(UInt8(ascii: "b"), &flag)
        case .int32(var n): return basic(UInt8(ascii: "i"), &n)
        case .uint32(var n): return basic(UInt8(ascii: "u"), &n)
        case .int64(var n): return basic(UInt8(ascii: "x"), &n)
        case .uint64(var n): return basic(UInt8(ascii: "t"), &n)
        case .strings(let list):
            var r = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "s")
            for s in list where r >= 0 { r = append(.string(s), to: message) }
            return r < 0 ? r : sd_bus_message_close_container(message)
        case .dictionary(let entries):
            var r = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "{sv}")
            for entry in entries where r >= 0 {
                r = sd_bus_message_open_container(message, CChar(UInt8(ascii: "e")), "sv")
                if r >= 0 { r = append(.string(entry.key), to: message) }
                if r >= 0 {
                    r = sd_bus_message_open_container(
                        message, CChar(UInt8(ascii: "v")), entry.value.signature)
                }
                if r >= 0 { r = append(entry.value, to: message) }
                if r >= 0 { r = sd_bus_message_close_container(message) }
                if r >= 0 { r = sd_bus_message_close_container(message) }
            }
            return r < 0 ? r : sd_bus_message_close_container(message)
        case .dictionaries(let list):
            var r = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "a{sv}")
            for entries in list where r >= 0 { r = append(.dictionary(entries), to: message) }
            return r < 0 ? r : sd_bus_message_close_container(message)
        }
    }
}

/// The service manager's notification socket (`sd_notify`), for readiness and stopping.
public enum ServiceManager {
    /// Sends `state` (`READY=1`, `STOPPING=1`, `STATUS=...`) when run under systemd; a no-op otherwise.
    public static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
