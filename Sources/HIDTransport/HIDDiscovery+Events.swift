#if canImport(Glibc)
    import Glibc
#endif
import Logging
import Synchronization
import Transport

extension HIDDiscovery {
    /// The FIDO interfaces present when iteration starts, as ``DeviceEvent/arrived(_:)``, then
    /// each one plugged in or unplugged, from udev.
    ///
    /// Each stream has its own thread with a udev monitor of the `hidraw` subsystem (udevd's
    /// events when udevd runs, the kernel's otherwise), opened before the present nodes are
    /// listed so that nothing plugged in meanwhile is missed. The thread sleeps in `poll` on the
    /// monitor and a wake-up pipe; when the consumer stops iterating, the pipe ends it. A node is
    /// a FIDO interface when its report descriptor declares usage page 0xF1D0, usage 1, as for
    /// ``open(uri:)``. If udev cannot be used, the stream ends (logged at debug).
    public func events() -> AsyncStream<DeviceEvent> {
        let logger = logger
        return AsyncStream { continuation in
            let watch: HIDHotplugWatch
            do throws(TransportError) {
                watch = try HIDHotplugWatch()
            } catch {
                logger.debug("no HID hotplug events", metadata: ["reason": "\(error)"])
                continuation.finish()
                return
            }
            continuation.onTermination = { _ in watch.stop() }
            let thread = BlockingIOThread(name: "hid hotplug", closedMessage: "The HID hotplug watch ended.")
            thread.shutdown(after: {
                watch.run(logger: logger) { continuation.yield($0) }
                continuation.finish()
            })
        }
    }
}

/// One ``HIDDiscovery/events()`` stream: the udev watch on its thread, and the pipe that wakes
/// it to stop.
final class HIDHotplugWatch: Sendable {
    /// The watch thread's kernel name.
    static let threadName = "hid hotplug"
    /// The read end, polled by the watch; closed by the watch when it ends.
    private let wakeRead: Int32
    /// The write end; nil once the watch closed it, so a late ``stop()`` never writes to a
    /// descriptor number the process has since reused.
    private let wakeWrite: Mutex<Int32?>

    /// `pipe`, both ends close-on-exec, the write end non-blocking.
    init() throws(TransportError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw TransportError(.system, "Could not create the hotplug wake-up pipe (errno \(errno)).")
        }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        wakeRead = ends[0]
        wakeWrite = Mutex(ends[1])
    }

    /// Wakes the watch, which then ends. Safe from any thread, any number of times.
    func stop() {
        wakeWrite.withLock { fd in
            guard let fd else { return }
            var byte: UInt8 = 1
            _ = write(fd, &byte, 1)  // a full pipe already holds a wake-up
        }
    }

    /// Watches until stopped or udev fails. Runs on the stream's thread, which it holds.
    func run(logger: Logger, yield: (DeviceEvent) -> Void) {
        BlockingIOThread.nameCurrentThread(Self.threadName)
        defer {
            wakeWrite.withLock { fd in
                if let fd { close(fd) }
                fd = nil
            }
            close(wakeRead)
        }
        do throws(TransportError) {
            let udev = try UDevContext()
            let source = UDevContext.Source.current
            let monitor = try udev.monitor(subsystem: "hidraw", source: source)
            let monitorFD = try monitor.descriptor()
            logger.debug("HID hotplug watch started", metadata: ["source": "\(source.rawValue)"])
            var reported: [String: DeviceDescriptor] = [:]
            Self.rescan(udev, reported: &reported, yield: yield)
            while true {
                var fds = [
                    pollfd(fd: monitorFD, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                ]
                let ready = poll(&fds, 2, -1)
                if ready < 0 {
                    if errno == EINTR { continue }
                    throw TransportError(.system, "Waiting for device events failed (poll, errno \(errno)).")
                }
                if fds[1].revents != 0 { return }
                if fds[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                    throw TransportError(.system, "The device event monitor failed.")
                }
                guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
                switch monitor.receive() {
                case .nothing:
                    break
                case .overflow:
                    logger.info("HID hotplug events were lost; listing the devices again")
                    Self.rescan(udev, reported: &reported, yield: yield)
                case .device(let device):
                    Self.handle(device, reported: &reported, logger: logger, yield: yield)
                }
            }
        } catch {
            logger.debug("HID hotplug events ended", metadata: ["reason": "\(error)"])
        }
    }

    /// An `add` of a FIDO node not yet reported arrives; a `remove` of a reported node leaves.
    private static func handle(
        _ device: UDevDevice, reported: inout [String: DeviceDescriptor], logger: Logger,
        yield: (DeviceEvent) -> Void
    ) {
        guard let node = device.devnode, isHidrawNode(node) else { return }
        let uri = "hid:\(node)"
        switch device.action {
        case "add":
            guard reported[uri] == nil, let descriptor = descriptor(device, node: node, logger: logger) else {
                return
            }
            reported[uri] = descriptor
            yield(.arrived(descriptor))
        case "remove":
            if reported.removeValue(forKey: uri) != nil { yield(.removed(uri: uri)) }
        default:
            break
        }
    }

    /// Lists the hidraw nodes now: FIDO ones not yet reported arrive, reported ones gone leave.
    private static func rescan(
        _ udev: UDevContext, reported: inout [String: DeviceDescriptor], yield: (DeviceEvent) -> Void
    ) {
        let quiet = Logger(label: "securitykey.hid.rescan", factory: { _ in SwiftLogNoOpLogHandler() })
        var present: [String: DeviceDescriptor] = [:]
        for device in (try? udev.devices(subsystem: "hidraw")) ?? [] {
            guard let node = device.devnode, isHidrawNode(node),
                let descriptor = descriptor(device, node: node, logger: quiet)
            else { continue }
            present[descriptor.uri] = descriptor
        }
        for uri in reported.keys.sorted() where present[uri] == nil {
            reported[uri] = nil
            yield(.removed(uri: uri))
        }
        for (uri, descriptor) in present.sorted(by: { $0.key < $1.key }) where reported[uri] == nil {
            reported[uri] = descriptor
            yield(.arrived(descriptor))
        }
    }

    /// `/dev/hidrawN`, nothing else (the node name comes from the kernel or udev rules).
    static func isHidrawNode(_ node: String) -> Bool {
        let prefix = "/dev/hidraw"
        guard node.hasPrefix(prefix), node.utf8.count <= prefix.utf8.count + 10 else { return false }
        let number = node.dropFirst(prefix.count)
        return !number.isEmpty && number.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// The descriptor ``HIDDiscovery/devices()`` gives a FIDO node, from udev's view of it; nil
    /// for nodes that are not FIDO interfaces (decided by the report descriptor, as opening does).
    static func descriptor(_ device: UDevDevice, node: String, logger: Logger) -> DeviceDescriptor? {
        do {
            _ = try HIDNode.reportDescriptor(path: node)
        } catch {
            logger.trace("not a FIDO interface", metadata: ["node": "\(node)", "reason": "\(error)"])
            return nil
        }
        let ids = device.hidProperty("HID_ID").flatMap(parseHIDID)
        // hidapi's choice: USB string descriptors for USB devices, the kernel's name and unique
        // ID for others (uhid, Bluetooth).
        let onUSB = device.isOnUSB
        return DeviceDescriptor(
            uri: "hid:\(node)", transport: .usb, vendorID: ids?.vendor, productID: ids?.product,
            manufacturer: onUSB ? device.usbAttribute("manufacturer") : nil,
            product: onUSB ? device.usbAttribute("product") : device.hidProperty("HID_NAME"),
            serialNumber: onUSB ? device.usbAttribute("serial") : device.hidProperty("HID_UNIQ"))
    }

    /// The kernel's `HID_ID=BBBB:VVVVVVVV:PPPPPPPP` (hex bus, vendor, product), vendor and
    /// product cut to the 16 bits USB has; nil when malformed.
    static func parseHIDID(_ text: String) -> (vendor: UInt16, product: UInt16)? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 3,
            fields.allSatisfy({ !$0.isEmpty && $0.count <= 8 && $0.allSatisfy(\.isHexDigit) }),
            let vendor = UInt32(fields[1], radix: 16), let product = UInt32(fields[2], radix: 16)
        else { return nil }
        return (UInt16(truncatingIfNeeded: vendor), UInt16(truncatingIfNeeded: product))
    }
}
