/// What a USB HID report descriptor says about a FIDO interface (HID 1.11 §6.2.2; CTAP 2.1 §11.2.8.1):
/// that it is on usage page 0xF1D0 with usage 0x01, and the sizes of its input and output reports.
public struct HIDReportDescriptor: Hashable, Sendable {
    /// The FIDO Alliance usage page.
    public static let fidoUsagePage: UInt16 = 0xF1D0
    /// The CTAPHID usage on that page.
    public static let ctaphidUsage: UInt16 = 0x01
    /// The longest descriptor accepted; real FIDO descriptors are a few dozen bytes.
    public static let maxLength = 4096

    /// The size in bytes of the interface's input reports (device to host).
    public var maxInputReportSize: Int
    /// The size in bytes of the interface's output reports (host to device).
    public var maxOutputReportSize: Int

    /// Creates a description from report sizes.
    public init(maxInputReportSize: Int, maxOutputReportSize: Int) {
        self.maxInputReportSize = maxInputReportSize
        self.maxOutputReportSize = maxOutputReportSize
    }

    /// Parses the short items of a report descriptor. Throws
    /// ``CTAPHIDError/Code/invalidReportDescriptor`` when the descriptor is malformed, is not
    /// a FIDO CTAPHID interface, or declares no input or output report.
    public init(bytes: [UInt8]) throws(CTAPHIDError) {
        guard bytes.count <= Self.maxLength else {
            throw CTAPHIDError(.invalidReportDescriptor, "The HID report descriptor is implausibly long.")
        }
        var usagePage: UInt32 = 0
        var reportSize: UInt32 = 0
        var reportCount: UInt32 = 0
        var isFIDO = false
        var inputBits = 0
        var outputBits = 0
        var index = 0
        while index < bytes.count {
            let prefix = bytes[index]
            if prefix == 0xFE {
                // A long item: data size in the next byte, skipped entirely.
                guard index + 2 < bytes.count else { break }
                index += 3 + Int(bytes[index + 1])
                continue
            }
            let size = [0, 1, 2, 4][Int(prefix & 0x03)]
            guard index + 1 + size <= bytes.count else {
                throw CTAPHIDError(.invalidReportDescriptor, "The HID report descriptor ends inside an item.")
            }
            var value: UInt32 = 0
            for offset in 0..<size { value |= UInt32(bytes[index + 1 + offset]) << (8 * offset) }
            index += 1 + size
            switch prefix & 0xFC {
            case 0x04: usagePage = value  // Usage Page (global)
            case 0x74: reportSize = value  // Report Size (global)
            case 0x94: reportCount = value  // Report Count (global)
            case 0x08:  // Usage (local)
                let page = size == 4 ? value >> 16 : usagePage
                let usage = size == 4 ? value & 0xFFFF : value
                if page == UInt32(Self.fidoUsagePage) && usage == UInt32(Self.ctaphidUsage) { isFIDO = true }
            case 0x80:  // Input (main)
                inputBits += Int(min(reportSize, 4096)) * Int(min(reportCount, 4096))
            case 0x90:  // Output (main)
                outputBits += Int(min(reportSize, 4096)) * Int(min(reportCount, 4096))
            default: break
            }
        }
        guard isFIDO else {
            throw CTAPHIDError(
                .invalidReportDescriptor, "The HID interface is not a FIDO (usage page 0xF1D0) interface.")
        }
        guard inputBits > 0, outputBits > 0, inputBits % 8 == 0, outputBits % 8 == 0 else {
            throw CTAPHIDError(
                .invalidReportDescriptor, "The FIDO HID interface declares no usable report sizes.")
        }
        self.init(maxInputReportSize: inputBits / 8, maxOutputReportSize: outputBits / 8)
    }
}
