import CSDBus
import Glibc
import Synchronization

/// Holds a pending call's continuation across sd-bus's C callback; resolved once, on the bus
/// thread (by its reply, or by the connection ending first).
final class PendingCall: @unchecked Sendable {
    private let continuation: CheckedContinuation<Result<BusReply, BusError>, Never>
    let connection: BusConnection
    /// Only the bus thread reads or writes it.
    private var resolved = false

    init(_ continuation: CheckedContinuation<Result<BusReply, BusError>, Never>, connection: BusConnection) {
        self.continuation = continuation
        self.connection = connection
    }

    func resolve(_ result: Result<BusReply, BusError>) {
        guard !resolved else { return }
        resolved = true
        connection.pendingCalls[ObjectIdentifier(self)] = nil
        continuation.resume(returning: result)
    }
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
        // Calls the bus will never answer now (it went away, or the connection was closed first).
        for pending in Array(pendingCalls.values) {
            pending.resolve(
                .failure(
                    BusError(function: "sd_bus_call_async", errno: ENOTCONN, "The connection closed first.")))
        }
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
        // A client exports nothing and watches nobody's departure.
        if objectPath.isEmpty { return }
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

    /// A reply: its values, or the error it carries.
    func readReply(_ reply: OpaquePointer) -> Result<BusReply, BusError> {
        if sd_bus_message_is_method_error(reply, nil) > 0 {
            guard let error = sd_bus_message_get_error(reply) else {
                return .success(.error(name: "", message: ""))
            }
            let name = error.pointee.name.map { String(cString: $0) } ?? ""
            let text = error.pointee.message.map { String(cString: $0) } ?? ""
            // A connection-level failure (timeout, closed) comes as a local error reply too.
            return .success(.error(name: name, message: text))
        }
        guard let values = readArguments(reply, dictionaries: true) else {
            return .failure(
                BusError(function: "sd_bus_message_read", errno: EBADMSG, "The reply has unexpected types."))
        }
        return .success(.values(values))
    }

    /// A matched signal, reported when its arguments can be read.
    func receivedSignal(_ message: OpaquePointer) {
        let sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
        let interface = sd_bus_message_get_interface(message).map { String(cString: $0) } ?? ""
        let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        guard let arguments = readArguments(message, dictionaries: true) else { return }
        continuation.yield(
            .signal(BusSignal(sender: sender, interface: interface, member: member, arguments: arguments)))
    }

    /// Reads an `a{sv}` whose values are of basic types (at most 64 entries); nil otherwise.
    func readDictionary(_ message: OpaquePointer) -> [BusDictionaryEntry]? {
        guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "a")), "{sv}") > 0 else {
            return nil
        }
        var entries: [BusDictionaryEntry] = []
        while entries.count <= 64 {
            let entered = sd_bus_message_enter_container(message, CChar(UInt8(ascii: "e")), "sv")
            if entered == 0 { break }
            guard entered > 0 else { return nil }
            var key: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &key) >= 0, let key else {
                return nil
            }
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            guard sd_bus_message_peek_type(message, &type, &contents) > 0, let contents,
                strlen(contents) == 1,
                sd_bus_message_enter_container(message, CChar(UInt8(ascii: "v")), contents) > 0,
                let values = readArguments(message, dictionaries: false), values.count == 1,
                sd_bus_message_exit_container(message) >= 0,  // the variant
                sd_bus_message_exit_container(message) >= 0  // the entry
            else { return nil }
            entries.append(BusDictionaryEntry(String(cString: key), values[0]))
        }
        guard entries.count <= 64, sd_bus_message_exit_container(message) >= 0 else { return nil }
        return entries
    }

    /// Reads basic-typed arguments (and `a{sv}` ones when `dictionaries`); nil when one is of
    /// another type or a string is too long.
    func readArguments(_ message: OpaquePointer, dictionaries: Bool = false) -> [BusValue]? {
        var values: [BusValue] = []
        while values.count < 16 {
            var type: CChar = 0
            var contents: UnsafePointer<CChar>?
            let more = sd_bus_message_peek_type(message, &type, &contents)
            if more == 0 { return values }
            guard more > 0 else { return nil }
            switch UInt8(bitPattern: type) {
            case UInt8(ascii: "a") where dictionaries && contents.map({ String(cString: $0) }) == "{sv}":
                guard let entries = readDictionary(message) else { return nil }
                values.append(.dictionary(entries))
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
