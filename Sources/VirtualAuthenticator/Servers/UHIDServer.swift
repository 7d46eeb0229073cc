#if canImport(Glibc)
    import Glibc
#endif
import CTAPHID
import Logging
import Transport

/// Serves a ``CTAPMessageHandler`` as a USB FIDO key through the Linux uhid driver: the kernel
/// creates a real `/dev/hidrawN` node (usage page 0xF1D0) that hidapi, libfido2 and browsers use.
///
/// `run()` opens `/dev/uhid`, sends UHID_CREATE2 with a FIDO report descriptor, turns each
/// UHID_OUTPUT into a CTAPHID report and answers with UHID_INPUT2 (CTAP 2.1 §11.2), until the
/// calling task is cancelled; then the device is destroyed. Needs write access to /dev/uhid.
public final class UHIDServer: Sendable {
    /// What the kernel and the host are told about the device.
    public struct Configuration: Sendable {
        /// The HID device name.
        public var name: String
        /// The serial number (`uniq`).
        public var serialNumber: String
        /// USB vendor ID (default: the pid.codes test vendor).
        public var vendorID: UInt32
        /// USB product ID.
        public var productID: UInt32
        /// Capability flags announced in CTAPHID_INIT.
        public var capabilities: CTAPHIDCapabilities
        /// How often KEEPALIVE is sent while a request is processed.
        public var keepaliveInterval: Duration
        /// A misbehaviour to show on purpose (``VirtualKeyFault/silentAfterInit``); nil for none.
        public var fault: VirtualKeyFault?

        /// A virtual key with CBOR and WINK.
        public init(
            name: String = "securitykey virtual FIDO key", serialNumber: String = "VIRTUAL0001",
            vendorID: UInt32 = 0x1209, productID: UInt32 = 0xF1D0,
            capabilities: CTAPHIDCapabilities = [.wink, .cbor],
            keepaliveInterval: Duration = .milliseconds(100)
        ) {
            self.name = name
            self.serialNumber = serialNumber
            self.vendorID = vendorID
            self.productID = productID
            self.capabilities = capabilities
            self.keepaliveInterval = keepaliveInterval
        }
    }

    /// The report descriptor: usage page 0xF1D0, usage 1, 64-byte input and output reports
    /// (CTAP 2.1 §11.2.8.1).
    public static let reportDescriptor: [UInt8] = [
        0x06, 0xD0, 0xF1,  // Usage Page (FIDO Alliance)
        0x09, 0x01,  // Usage (CTAPHID)
        0xA1, 0x01,  // Collection (Application)
        0x09, 0x20,  //   Usage (Input Report Data)
        0x15, 0x00,  //   Logical Minimum (0)
        0x26, 0xFF, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,  //   Report Size (8)
        0x95, 0x40,  //   Report Count (64)
        0x81, 0x02,  //   Input (Data, Variable, Absolute)
        0x09, 0x21,  //   Usage (Output Report Data)
        0x15, 0x00,  //   Logical Minimum (0)
        0x26, 0xFF, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,  //   Report Size (8)
        0x95, 0x40,  //   Report Count (64)
        0x91, 0x02,  //   Output (Data, Variable, Absolute)
        0xC0,  // End Collection
    ]

    private let handler: any CTAPMessageHandler
    private let configuration: Configuration
    private let logger: Logger
    private let path: String

    /// Creates a server; nothing is opened until ``run()``.
    public init(
        handler: any CTAPMessageHandler, configuration: Configuration = Configuration(),
        path: String = "/dev/uhid",
        logger: Logger = Logger(label: "securitykey.virtual.uhid")
    ) {
        self.handler = handler
        self.configuration = configuration
        self.path = path
        self.logger = logger
    }

    /// Creates the device and serves it until the calling task is cancelled.
    public func run() async throws(TransportError) {
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw TransportError(
                code == EACCES || code == EPERM ? .permissionDenied : .noDevice,
                code == EACCES || code == EPERM
                    ? "You may not open \(path); the uhid server needs write access to it."
                    : "\(path) is missing; load the uhid kernel module (modprobe uhid).")
        }
        let thread = BlockingIOThread(name: "uhid", closedMessage: "The server was closed.")
        defer {
            _ = UHIDEvent.write(fd, UHIDEvent.destroy())
            Glibc.close(fd)
            thread.shutdown()
        }
        guard UHIDEvent.write(fd, UHIDEvent.create(configuration)) else {
            throw TransportError(.system, "The kernel refused to create the uhid device (errno \(errno)).")
        }
        await handler.powerCycle()
        let info = CTAPHIDInitResponse(
            nonce: [], channel: 0, majorVersion: 1, minorVersion: 0, buildVersion: 0,
            capabilities: configuration.capabilities)
        let engine = CTAPHIDServerEngine<Void>(
            handler: handler, device: CTAPHIDDeviceState(deviceInfo: info),
            keepaliveInterval: configuration.keepaliveInterval, fault: configuration.fault, logger: logger
        ) { report, _ in
            _ = UHIDEvent.write(fd, UHIDEvent.input(report))
        }
        logger.info("uhid FIDO device created", metadata: ["name": "\(configuration.name)"])
        let failure: TransportError? = await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                let event: [UInt8]?
                do throws(TransportError) {
                    event = try await thread.run(skipIfCancelled: true) { () throws(TransportError) in
                        try UHIDEvent.read(fd)
                    }
                } catch {
                    if error.code == .cancelled { break }
                    group.cancelAll()
                    return error
                }
                if let event { handle(event, fd: fd, engine: engine, group: &group) }
                engine.expire()
            }
            group.cancelAll()
            return nil
        }
        if let failure { throw failure }
    }

    private func handle(
        _ event: [UInt8], fd: Int32, engine: CTAPHIDServerEngine<Void>, group: inout DiscardingTaskGroup
    ) {
        switch UHIDEvent.type(of: event) {
        case UHIDEvent.output:
            guard var report = UHIDEvent.outputReport(event) else { return }
            // hidraw passes the report-ID byte (0: the descriptor has no report IDs) first.
            if report.count == 65, report.first == 0 { report.removeFirst() }
            guard report.count <= 64 else { return }
            report += Array(repeating: 0, count: 64 - report.count)
            engine.receive(report, from: (), in: &group)
        case UHIDEvent.getReport:
            // The FIDO interface has no feature reports; answer at once so the kernel does not wait.
            if let id = UHIDEvent.requestID(event) {
                _ = UHIDEvent.write(fd, UHIDEvent.getReportReply(id: id))
            }
        case UHIDEvent.setReport:
            if let id = UHIDEvent.requestID(event) {
                _ = UHIDEvent.write(fd, UHIDEvent.setReportReply(id: id))
            }
        default:
            break  // START, STOP, OPEN, CLOSE need no answer.
        }
    }
}

/// `struct uhid_event` from <linux/uhid.h>, packed, built and parsed byte by byte.
enum UHIDEvent {
    static let size = 4376
    static let destroyType: UInt32 = 1
    static let output: UInt32 = 6
    static let getReport: UInt32 = 9
    static let getReportReplyType: UInt32 = 10
    static let create2: UInt32 = 11
    static let input2: UInt32 = 12
    static let setReport: UInt32 = 13
    static let setReportReplyType: UInt32 = 14
    static let dataMax = 4096
    /// EIO, the error a report request is answered with.
    static let ioError: UInt16 = 5

    private static func event(_ type: UInt32) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        put32(&bytes, 0, type)
        return bytes
    }

    private static func put32(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt32) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    private static func put16(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt16) {
        bytes[offset] = UInt8(truncatingIfNeeded: value)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
    }

    private static func get32(_ bytes: [UInt8], _ offset: Int) -> UInt32? {
        guard bytes.count >= offset + 4 else { return nil }
        return (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    private static func putString(_ bytes: inout [UInt8], _ offset: Int, _ capacity: Int, _ text: String) {
        let utf8 = Array(text.utf8.prefix(capacity - 1))
        bytes.replaceSubrange(offset..<offset + utf8.count, with: utf8)
    }

    /// UHID_CREATE2: name, phys, uniq, descriptor size, bus, vendor, product, version, country, descriptor.
    static func create(_ configuration: UHIDServer.Configuration) -> [UInt8] {
        var bytes = event(create2)
        putString(&bytes, 4, 128, configuration.name)
        putString(&bytes, 132, 64, "securitykey/uhid")
        putString(&bytes, 196, 64, configuration.serialNumber)
        put16(&bytes, 260, UInt16(UHIDServer.reportDescriptor.count))
        put16(&bytes, 262, 0x03)  // BUS_USB
        put32(&bytes, 264, configuration.vendorID)
        put32(&bytes, 268, configuration.productID)
        put32(&bytes, 272, 0x0100)
        bytes.replaceSubrange(
            280..<280 + UHIDServer.reportDescriptor.count, with: UHIDServer.reportDescriptor)
        return bytes
    }

    static func destroy() -> [UInt8] { event(destroyType) }

    /// UHID_INPUT2: size, then the report.
    static func input(_ report: [UInt8]) -> [UInt8] {
        var bytes = event(input2)
        let data = report.prefix(dataMax)
        put16(&bytes, 4, UInt16(data.count))
        bytes.replaceSubrange(6..<6 + data.count, with: data)
        return bytes
    }

    static func getReportReply(id: UInt32) -> [UInt8] {
        var bytes = event(getReportReplyType)
        put32(&bytes, 4, id)
        put16(&bytes, 8, ioError)
        return bytes
    }

    static func setReportReply(id: UInt32) -> [UInt8] {
        var bytes = event(setReportReplyType)
        put32(&bytes, 4, id)
        put16(&bytes, 8, ioError)
        return bytes
    }

    static func type(of event: [UInt8]) -> UInt32? { get32(event, 0) }

    static func requestID(_ event: [UInt8]) -> UInt32? { get32(event, 4) }

    /// The data of a UHID_OUTPUT event (`data[4096]`, then `size`), size checked.
    static func outputReport(_ event: [UInt8]) -> [UInt8]? {
        let sizeOffset = 4 + dataMax
        guard event.count >= sizeOffset + 2 else { return nil }
        let count = Int(event[sizeOffset]) | Int(event[sizeOffset + 1]) << 8
        guard count <= dataMax else { return nil }
        return Array(event[4..<4 + count])
    }

    /// `write(2)` of one whole event.
    static func write(_ fd: Int32, _ event: [UInt8]) -> Bool {
        event.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == event.count
    }

    /// Waits one slice (`poll`) and reads one event (`read(2)`). Runs on the server thread.
    static func read(_ fd: Int32) throws(TransportError) -> [UInt8]? {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, 100)
        if ready < 0 {
            if errno == EINTR { return nil }
            throw TransportError(.system, "Waiting on /dev/uhid failed (errno \(errno)).")
        }
        guard ready > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: size)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count >= 0 else {
            if errno == EINTR || errno == EAGAIN { return nil }
            throw TransportError(.system, "Reading /dev/uhid failed (errno \(errno)).")
        }
        return Array(buffer.prefix(count))
    }
}
