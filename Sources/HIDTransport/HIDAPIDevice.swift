#if canImport(Glibc)
    import Glibc
#endif
import CHIDAPI
import Transport

/// Thin wrappers over hidapi (hidraw backend), one per C function. Every method must be called
/// on the I/O thread that owns the device (or, for enumeration, the enumeration thread).
enum HIDAPI {
    /// `hid_init`, once per process, before any other hidapi call.
    static let initialized: Bool = hid_init() == 0

    /// One HID interface as `hid_enumerate` reports it.
    struct DeviceInfo: Sendable {
        var path: String
        var vendorID: UInt16
        var productID: UInt16
        var manufacturer: String?
        var product: String?
        var serialNumber: String?
        var usagePage: UInt16
        var usage: UInt16
    }

    /// `hid_enumerate(0, 0)`: every HID interface, copied out before `hid_free_enumeration`.
    static func enumerate() throws(TransportError) -> [DeviceInfo] {
        guard initialized else {
            throw TransportError(.system, "hidapi could not be initialised (hid_init failed).")
        }
        guard let first = hid_enumerate(0, 0) else { return [] }
        defer { hid_free_enumeration(first) }
        var found: [DeviceInfo] = []
        var cursor: UnsafeMutablePointer<hid_device_info>? = first
        while let info = cursor?.pointee {
            if let path = info.path {
                found.append(
                    DeviceInfo(
                        path: String(cString: path), vendorID: info.vendor_id, productID: info.product_id,
                        manufacturer: string(info.manufacturer_string), product: string(info.product_string),
                        serialNumber: string(info.serial_number), usagePage: info.usage_page,
                        usage: info.usage))
            }
            cursor = info.next
        }
        return found
    }

    /// A wide C string as a Swift string; nil for NULL or empty, invalid scalars replaced.
    static func string(_ wide: UnsafeMutablePointer<wchar_t>?) -> String? {
        guard let wide else { return nil }
        var scalars = String.UnicodeScalarView()
        var index = 0
        while wide[index] != 0, index < 1024 {
            scalars.append(Unicode.Scalar(UInt32(bitPattern: wide[index])) ?? "\u{FFFD}")
            index += 1
        }
        return scalars.isEmpty ? nil : String(scalars)
    }

    /// `hid_error`, as text.
    static func lastError(_ device: OpaquePointer?) -> String {
        string(UnsafeMutablePointer(mutating: hid_error(device))) ?? "unknown hidapi error"
    }
}

/// An open hidapi device. Not thread-safe: confined to its ``BlockingIOThread``.
final class HIDAPIDevice: @unchecked Sendable {
    private var handle: OpaquePointer?
    let path: String

    /// `hid_open_path`.
    init(path: String) throws(TransportError) {
        guard HIDAPI.initialized else {
            throw TransportError(.system, "hidapi could not be initialised (hid_init failed).")
        }
        guard let handle = hid_open_path(path) else {
            throw TransportError(.noDevice, "Could not open \(path): \(HIDAPI.lastError(nil)).")
        }
        self.handle = handle
        self.path = path
    }

    /// `hid_write` with the report-ID byte 0 that devices without report IDs need.
    func write(_ report: [UInt8]) throws(TransportError) {
        guard let handle else { throw TransportError(.closed, "The security key \(path) was closed.") }
        let data = [0] + report
        let written = hid_write(handle, data, data.count)
        guard written >= 0 else {
            throw TransportError(
                .noDevice,
                "Writing to \(path) failed; the key may have been removed (\(HIDAPI.lastError(handle))).")
        }
    }

    /// `hid_read_timeout`: one report, or nil when none arrived within `milliseconds`.
    func read(size: Int, milliseconds: Int32) throws(TransportError) -> [UInt8]? {
        guard let handle else { throw TransportError(.closed, "The security key \(path) was closed.") }
        var buffer = [UInt8](repeating: 0, count: size)
        let count = hid_read_timeout(handle, &buffer, size, milliseconds)
        guard count >= 0 else {
            throw TransportError(
                .noDevice,
                "Reading from \(path) failed; the key may have been removed (\(HIDAPI.lastError(handle))).")
        }
        return count == 0 ? nil : Array(buffer.prefix(Int(count)))
    }

    /// False once closed.
    var isOpen: Bool { handle != nil }

    /// `hid_close`.
    func close() {
        if let handle { hid_close(handle) }
        handle = nil
    }
}
