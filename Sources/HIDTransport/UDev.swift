#if canImport(Glibc)
    import Glibc
#endif
import CUDev
import Transport

/// Thin wrappers over libudev, one per C function used, each turning a failure into a
/// ``TransportError`` in one place. Not thread-safe: a context and everything made from it stay
/// on the thread that made them (libudev objects are not shared between threads).
final class UDevContext {
    private let handle: OpaquePointer

    /// `udev_new`.
    init() throws(TransportError) {
        guard let handle = udev_new() else {
            throw TransportError(
                .system, "libudev could not be initialised (udev_new failed, errno \(errno)).")
        }
        self.handle = handle
    }

    deinit { udev_unref(handle) }

    /// Which netlink source a monitor listens to.
    enum Source: String {
        /// Events after udevd processed them (device nodes ready, permissions set).
        case udev
        /// Raw kernel uevents, for systems without udevd (containers, minimal guests).
        case kernel

        /// `udev` when udevd runs (its control socket exists), else `kernel`.
        static var current: Source { access("/run/udev/control", F_OK) == 0 ? .udev : .kernel }
    }

    /// `udev_monitor_new_from_netlink` + `udev_monitor_filter_add_match_subsystem_devtype` +
    /// `udev_monitor_enable_receiving`: a monitor of one subsystem, receiving.
    func monitor(subsystem: String, source: Source) throws(TransportError) -> UDevMonitor {
        guard let monitor = udev_monitor_new_from_netlink(handle, source.rawValue) else {
            throw TransportError(
                .system, "Could not listen for device events (udev_monitor_new_from_netlink, errno \(errno))."
            )
        }
        let result = UDevMonitor(monitor)
        var rc = udev_monitor_filter_add_match_subsystem_devtype(monitor, subsystem, nil)
        guard rc >= 0 else {
            throw TransportError(
                .system,
                "Could not filter device events (udev_monitor_filter_add_match_subsystem_devtype, \(rc)).")
        }
        rc = udev_monitor_enable_receiving(monitor)
        guard rc >= 0 else {
            throw TransportError(
                .system, "Could not receive device events (udev_monitor_enable_receiving, \(rc)).")
        }
        return result
    }

    /// `udev_enumerate_new` + `udev_enumerate_add_match_subsystem` + `udev_enumerate_scan_devices`,
    /// then `udev_device_new_from_syspath` for each entry: the subsystem's devices now, at most
    /// `limit`.
    func devices(subsystem: String, limit: Int = 1024) throws(TransportError) -> [UDevDevice] {
        guard let enumerate = udev_enumerate_new(handle) else {
            throw TransportError(.system, "Could not list devices (udev_enumerate_new, errno \(errno)).")
        }
        defer { udev_enumerate_unref(enumerate) }
        var rc = udev_enumerate_add_match_subsystem(enumerate, subsystem)
        guard rc >= 0 else {
            throw TransportError(
                .system, "Could not list devices (udev_enumerate_add_match_subsystem, \(rc)).")
        }
        rc = udev_enumerate_scan_devices(enumerate)
        guard rc >= 0 else {
            throw TransportError(.system, "Could not list devices (udev_enumerate_scan_devices, \(rc)).")
        }
        var found: [UDevDevice] = []
        var entry = udev_enumerate_get_list_entry(enumerate)
        while let current = entry, found.count < limit {
            entry = udev_list_entry_get_next(current)
            guard let path = udev_list_entry_get_name(current),
                let device = udev_device_new_from_syspath(handle, path)
            else { continue }  // gone since the scan
            found.append(UDevDevice(device))
        }
        return found
    }
}

/// A receiving udev monitor.
final class UDevMonitor {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { udev_monitor_unref(handle) }

    /// `udev_monitor_get_fd`: the descriptor to poll.
    func descriptor() throws(TransportError) -> Int32 {
        let fd = udev_monitor_get_fd(handle)
        guard fd >= 0 else {
            throw TransportError(
                .system, "The device event monitor has no descriptor (udev_monitor_get_fd, \(fd)).")
        }
        return fd
    }

    /// What one receive gave.
    enum Received {
        case device(UDevDevice)
        /// Nothing to take (a message filtered out, or a spurious wake-up).
        case nothing
        /// The kernel dropped events (`ENOBUFS`): the caller must rescan.
        case overflow
    }

    /// `udev_monitor_receive_device` (the monitor's socket is non-blocking).
    func receive() -> Received {
        errno = 0
        guard let device = udev_monitor_receive_device(handle) else {
            return errno == ENOBUFS ? .overflow : .nothing
        }
        return .device(UDevDevice(device))
    }
}

/// One udev device; strings read from it are bounded and may be absent.
final class UDevDevice {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { udev_device_unref(handle) }

    /// The longest string taken from udev (properties and sysfs attributes are short).
    static let maxStringLength = 1024

    /// `udev_device_get_devnode`: `/dev/hidrawN`.
    var devnode: String? { Self.string(udev_device_get_devnode(handle)) }

    /// `udev_device_get_action`: `add`, `remove`, ...; nil for enumerated devices.
    var action: String? { Self.string(udev_device_get_action(handle)) }

    /// `udev_device_get_property_value` on the `hid` parent: the kernel's HID_ID, HID_NAME,
    /// HID_UNIQ.
    func hidProperty(_ name: String) -> String? {
        guard let parent = udev_device_get_parent_with_subsystem_devtype(handle, "hid", nil) else {
            return nil
        }
        return Self.string(udev_device_get_property_value(parent, name))
    }

    /// `udev_device_get_sysattr_value` on the `usb_device` parent (manufacturer, product,
    /// serial); nil when the device is not on USB (uhid, Bluetooth).
    func usbAttribute(_ name: String) -> String? {
        guard let parent = udev_device_get_parent_with_subsystem_devtype(handle, "usb", "usb_device") else {
            return nil
        }
        return Self.string(udev_device_get_sysattr_value(parent, name))
    }

    /// Whether the device has a `usb_device` parent.
    var isOnUSB: Bool { udev_device_get_parent_with_subsystem_devtype(handle, "usb", "usb_device") != nil }

    /// A C string from udev as Swift text: nil for NULL or empty, cut at ``maxStringLength``
    /// bytes, invalid UTF-8 replaced.
    static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        guard let pointer else { return nil }
        let length = strnlen(pointer, maxStringLength)
        guard length > 0 else { return nil }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
        return String(decoding: bytes, as: UTF8.self)
    }
}
