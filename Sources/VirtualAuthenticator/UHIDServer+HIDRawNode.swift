import FoundationEssentials
import _SecurityKeyInternals

extension UHIDServer {
    /// The `/dev/hidrawN` path the kernel made for a uhid device whose serial number
    /// (`HID_UNIQ` in its sysfs uevent) is `serialNumber`, once both its sysfs entry and its
    /// device node exist; nil when `within` passes first or the task is cancelled.
    public static func hidrawNode(serialNumber: String, within: Duration) async -> String? {
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline, !Task.isCancelled {
            if let node = findHIDRawNode(serialNumber: serialNumber), FileManager.default.fileExists(atPath: node) {
                return node
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    private static func findHIDRawNode(serialNumber: String) -> String? {
        let base = "/sys/class/hidraw"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { return nil }
        for name in names.sorted() where name.hasPrefix("hidraw") {
            // uevent files are a few hundred bytes; read at most 4 KiB.
            guard let data = FileIO.read(path: "\(base)/\(name)/device/uevent", upTo: 4096),
                let text = String(validating: data, as: UTF8.self)
            else { continue }
            if text.split(separator: "\n").contains(Substring("HID_UNIQ=\(serialNumber)")) { return "/dev/\(name)" }
        }
        return nil
    }
}
