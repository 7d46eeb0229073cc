#if canImport(Glibc)
    import Glibc
#endif
import CTAPHID
import Logging
import Transport

/// CTAPHID reports to and from a hidraw node through hidapi.
///
/// The node is held with an exclusive `flock` on its own descriptor for as long as the pipe is
/// open, so other processes that lock it the same way (libfido2 does) wait their turn. Every
/// hidapi call runs on the pipe's own ``BlockingIOThread``; reads are bounded by the slice asked for.
public final class HIDReportPipe: CTAPHIDReportPipe {
    /// The size of the device's reports, from its report descriptor.
    public let reportSize: Int
    /// The hidraw node.
    public let path: String
    private let device: HIDAPIDevice
    private let lockDescriptor: Int32
    private let thread: BlockingIOThread

    /// The device's thread: every hidapi call of the pipe is bounded by the slice asked for.
    public var preferredTaskExecutor: (any TaskExecutor)? { thread }

    /// How often a held lock is retried while waiting for another process.
    static let lockRetry: Duration = .milliseconds(50)

    private init(
        path: String, reportSize: Int, device: HIDAPIDevice, lockDescriptor: Int32, thread: BlockingIOThread
    ) {
        self.path = path
        self.reportSize = reportSize
        self.device = device
        self.lockDescriptor = lockDescriptor
        self.thread = thread
    }

    deinit {
        // A pipe dropped without close(): release the device and the lock on its own thread.
        let device = self.device
        let fd = lockDescriptor
        thread.shutdown {
            if device.isOpen {
                device.close()
                Glibc.close(fd)
            }
        }
    }

    /// Opens `path` (a `/dev/hidrawN` node of a FIDO interface), waiting until `deadline` for
    /// another process to release it; `logger`, when given, is told once (at `warning`, which
    /// the CLI shows) that the key is busy and the open waits.
    public static func open(path: String, deadline: Deadline, logger: Logger? = nil) async throws(TransportError)
        -> HIDReportPipe
    {
        let thread = BlockingIOThread(name: "hid \(path)")
        let descriptor: HIDReportDescriptor
        let fd: Int32
        do throws(TransportError) {
            descriptor = try await thread.run(skipIfCancelled: true) { () throws(TransportError) in
                try HIDNode.reportDescriptor(path: path)
            }
            fd = try await thread.run(skipIfCancelled: true) { () throws(TransportError) in
                try HIDNode.openForLock(path)
            }
        } catch {
            thread.shutdown()
            throw error
        }
        do throws(TransportError) {
            var told = false
            while true {
                let locked = try await thread.run(skipIfCancelled: true) { () throws(TransportError) in
                    try HIDNode.tryLock(fd, path: path)
                }
                if locked { break }
                if !told {
                    // Same words as a CTAPHID key answering ERR_CHANNEL_BUSY: the user should
                    // know why nothing happens, not only when the wait fails.
                    logger?.warning(
                        "The security key is busy with another application; waiting for it.",
                        metadata: ["uri": "hid:\(path)"])
                    told = true
                }
                guard deadline.remaining > lockRetry else {
                    throw TransportError(
                        .busy, "The security key \(path) stayed busy with another application until the deadline.")
                }
                do {
                    try await Task.sleep(for: lockRetry)
                } catch {
                    throw TransportError(.cancelled, "The operation was cancelled.")
                }
            }
            let device = try await thread.run(skipIfCancelled: true) { () throws(TransportError) in
                try HIDAPIDevice(path: path)
            }
            return HIDReportPipe(
                path: path, reportSize: descriptor.maxOutputReportSize, device: device, lockDescriptor: fd,
                thread: thread)
        } catch {
            _ = try? await thread.run(skipIfCancelled: false) { () throws(TransportError) in Glibc.close(fd) }
            thread.shutdown()
            throw error
        }
    }

    /// Writes one report (`hid_write`).
    public func write(_ report: [UInt8]) async throws(TransportError) {
        try await write(reports: [report])
    }

    /// Writes the reports in order (`hid_write`), in one trip to the device's thread.
    public func write(reports: [[UInt8]]) async throws(TransportError) {
        let device = self.device
        try await thread.run(skipIfCancelled: false) { () throws(TransportError) in
            for report in reports { try device.write(report) }
        }
    }

    /// Reads one report, waiting at most `timeout` (`hid_read_timeout`).
    public func read(timeout: Duration) async throws(TransportError) -> [UInt8]? {
        try await transfer(sending: [], readingFor: timeout, limit: 1, until: { _ in true }).first
    }

    /// Writes `reports` (`hid_write`), then reads (`hid_read_timeout`) until `complete` says
    /// the message is whole, `limit`, or `timeout`, in one trip to the device's thread.
    public func transfer(
        sending reports: [[UInt8]], readingFor timeout: Duration, limit: Int,
        until complete: @escaping @Sendable ([UInt8]) -> Bool
    ) async throws(TransportError) -> [[UInt8]] {
        let device = self.device
        let size = reportSize
        return try await thread.run(skipIfCancelled: true) { () throws(TransportError) in
            for report in reports { try device.write(report) }
            let deadline = Deadline.after(timeout)
            var received: [[UInt8]] = []
            while received.count < limit,
                let report = try device.read(size: size, milliseconds: deadline.remaining.clampedMilliseconds)
            {
                received.append(report)
                if complete(report) { break }
            }
            return received
        }
    }

    /// Closes the device and releases the lock.
    public func close() async {
        let device = self.device
        let fd = lockDescriptor
        _ = try? await thread.run(skipIfCancelled: false) { () throws(TransportError) in
            if device.isOpen {
                device.close()
                Glibc.close(fd)
            }
        }
        thread.shutdown()
    }
}

/// The file-system side of a hidraw node: its report descriptor in sysfs, and the lock.
enum HIDNode {
    /// The udev rules hint every permission error carries.
    static let udevHint =
        "Install udev rules that grant your user access to FIDO devices (this project's udev/70-securitykey.rules, which `make install` puts in /etc/udev/rules.d) and replug the key."

    /// Reads and parses `/sys/class/hidraw/hidrawN/device/report_descriptor`; refuses interfaces
    /// that are not FIDO (a keyboard must never be opened).
    static func reportDescriptor(path: String) throws(TransportError) -> HIDReportDescriptor {
        guard let name = path.split(separator: "/").last, name.hasPrefix("hidraw"),
            name.dropFirst(6).allSatisfy(\.isNumber), !name.dropFirst(6).isEmpty
        else {
            throw TransportError(.invalidURI, "'\(path)' is not a hidraw device node like /dev/hidraw0.")
        }
        let sysfs = "/sys/class/hidraw/\(name)/device/report_descriptor"
        let fd = Glibc.open(sysfs, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TransportError(.noDevice, "No HID device is present at \(path).")
        }
        defer { Glibc.close(fd) }
        var bytes = [UInt8](repeating: 0, count: HIDReportDescriptor.maxLength)
        let count = Glibc.read(fd, &bytes, bytes.count)
        guard count > 0 else {
            throw TransportError(.noDevice, "The report descriptor of \(path) could not be read.")
        }
        let descriptor: HIDReportDescriptor
        do {
            descriptor = try HIDReportDescriptor(bytes: Array(bytes.prefix(count)))
        } catch {
            throw TransportError(
                .notSupported, "\(path) is not a FIDO security key interface.", underlying: error)
        }
        guard descriptor.maxInputReportSize == descriptor.maxOutputReportSize,
            CTAPHIDMessage.supportedReportSizes.contains(descriptor.maxOutputReportSize)
        else {
            throw TransportError(.notSupported, "\(path) declares HID report sizes CTAPHID cannot use.")
        }
        return descriptor
    }

    /// `open(2)` of the node for locking; maps EACCES to a permission error naming the node.
    static func openForLock(_ path: String) throws(TransportError) -> Int32 {
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case EACCES, EPERM:
                throw TransportError(.permissionDenied, "You may not open \(path). \(udevHint)")
            case ENOENT, ENODEV, ENXIO:
                throw TransportError(.noDevice, "No security key is present at \(path).")
            default:
                throw TransportError(.system, "Could not open \(path) (errno \(code)).")
            }
        }
        return fd
    }

    /// `flock(LOCK_EX | LOCK_NB)`: true when locked, false when another process holds it.
    static func tryLock(_ fd: Int32, path: String) throws(TransportError) -> Bool {
        if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
        let code = errno
        if code == EWOULDBLOCK || code == EINTR { return false }
        throw TransportError(.system, "Could not lock \(path) (errno \(code)).")
    }
}
