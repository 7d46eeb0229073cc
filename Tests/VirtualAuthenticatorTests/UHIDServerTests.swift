import CTAPHID
import Foundation
import HIDTransport
import Testing
import Transport
import VirtualAuthenticator

/// The uhid server seen through a real hidraw node and hidapi. Runs only where /dev/uhid exists:
/// in the QEMU guest of `scripts/hidvm/test-uhid.sh` (this host's kernel has no uhid).
// Serialized: hosts that enumerate (python-fido2, libfido2) would otherwise open the key a
// parallel test holds.
@Suite(
    .serialized,
    .enabled(
        if: FileManager.default.fileExists(atPath: "/dev/uhid"),
        "needs /dev/uhid: run scripts/hidvm/test-uhid.sh"))
struct UHIDServerTests {
    /// Waits (up to 20 s: the guest is slow) for hidapi to list the virtual key.
    static func waitForKey(serial: String) async throws -> DeviceDescriptor? {
        for _ in 0..<200 {
            if let key = try await HIDDiscovery().devices().first(where: { $0.serialNumber == serial }) {
                return key
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    @Test func hidapiFindsOpensAndTalksToTheKey() async throws {
        let handler = CTAPHIDTestHandler(tag: [0x55])
        let server = UHIDServer(handler: handler, configuration: .init(serialNumber: "UHIDTEST1"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let key = try #require(try await Self.waitForKey(serial: "UHIDTEST1"))
            #expect(key.uri.hasPrefix("hid:/dev/hidraw"))
            #expect(key.vendorID == 0x1209)
            #expect(key.productID == 0xF1D0)
            #expect(key.product == "securitykey virtual FIDO key")
            let discovery = HIDDiscovery(openTimeout: .seconds(20))
            let connection = try await discovery.open(uri: key.uri)
            #expect(connection.capabilities == [.cbor, .wink])
            let payload = (0..<1000).map { UInt8(truncatingIfNeeded: $0) }
            #expect(
                try await connection.transact(.cbor, payload: payload, timeout: .seconds(20)) == [0, 0x55]
                    + payload)
            try await connection.wink()
            // The flock keeps a second opener out while the first holds the key.
            await #expect {
                _ = try await HIDDiscovery(openTimeout: .milliseconds(300)).open(uri: key.uri)
            } throws: { ($0 as? TransportError)?.code == .busy }
            await connection.close()
            let again = try await discovery.open(uri: key.uri)
            #expect(try await again.transact(.cbor, payload: [1], timeout: .seconds(20)) == [0, 0x55, 1])
            await again.close()
            group.cancelAll()
        }
        #expect(handler.winks.withLock { $0 } == 1)
    }
}

extension UHIDServerTests {
    static let pythonScript = #"""
        import json, sys
        from fido2.hid import CtapHidDevice, CTAPHID
        devices = [d for d in CtapHidDevice.list_devices() if d.serial_number == sys.argv[1]]
        dev = devices[0]
        print(json.dumps({
            "count": len(devices), "vid": dev.descriptor.vid, "pid": dev.descriptor.pid,
            "size": [dev.descriptor.report_size_in, dev.descriptor.report_size_out],
            "capabilities": int(dev.capabilities), "cbor": dev.call(CTAPHID.CBOR, b"\x04\x05").hex(),
            "ping": dev.ping(b"uhid").hex(),
        }))
        """#

    @Test func pythonFIDO2FindsAndTalksToTheKey() async throws {
        let server = UHIDServer(
            handler: CTAPHIDTestHandler(tag: [0x77]), configuration: .init(serialNumber: "UHIDTEST2"))
        let output = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                try await server.run()
                return nil
            }
            defer { group.cancelAll() }
            _ = try #require(try await Self.waitForKey(serial: "UHIDTEST2"))
            return try await runPythonFIDO2(Self.pythonScript, arguments: ["UHIDTEST2"])
        }
        let result = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] ?? [:]
        #expect(result["count"] as? Int == 1)
        #expect(result["vid"] as? Int == 0x1209)
        #expect(result["pid"] as? Int == 0xF1D0)
        #expect(result["size"] as? [Int] == [64, 64])
        #expect(result["capabilities"] as? Int == 0x05)
        #expect(result["cbor"] as? String == "00770405")
        #expect(result["ping"] as? String == "75686964")
    }
}

extension UHIDServerTests {
    /// A boot keyboard's report descriptor (HID 1.11 Appendix B.1): usage page 1, usage 6.
    static let keyboardDescriptor: [UInt8] = [
        0x05, 0x01, 0x09, 0x06, 0xA1, 0x01, 0x05, 0x07, 0x19, 0xE0, 0x29, 0xE7, 0x15, 0x00, 0x25, 0x01,
        0x75, 0x01, 0x95, 0x08, 0x81, 0x02, 0x95, 0x01, 0x75, 0x08, 0x81, 0x01, 0x95, 0x06, 0x75, 0x08,
        0x15, 0x00, 0x25, 0x65, 0x05, 0x07, 0x19, 0x00, 0x29, 0x65, 0x81, 0x00, 0xC0,
    ]

    /// UHID_CREATE2 for a keyboard, laid out from <linux/uhid.h> here rather than with the
    /// server's own encoder.
    static func keyboardCreateEvent(serial: String) -> [UInt8] {
        var event = [UInt8](repeating: 0, count: 4376)
        event[0] = 11  // UHID_CREATE2
        for (offset, text) in [(4, "test keyboard"), (196, serial)] {
            event.replaceSubrange(offset..<offset + text.utf8.count, with: Array(text.utf8))
        }
        event[260] = UInt8(keyboardDescriptor.count)  // rd_size
        event[262] = 0x03  // BUS_USB
        event[264] = 0x6D; event[265] = 0x04  // vendor 0x046D
        event[268] = 0x1C; event[269] = 0xC3  // product 0xC31C
        event.replaceSubrange(280..<280 + keyboardDescriptor.count, with: keyboardDescriptor)
        return event
    }

    /// The hidraw node names whose sysfs uevent carries `HID_UNIQ=serial`.
    static func hidrawNodes(serial: String) -> [String] {
        let base = "/sys/class/hidraw"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        return names.filter { name in
            let uevent = (try? String(contentsOfFile: "\(base)/\(name)/device/uevent", encoding: .utf8)) ?? ""
            return uevent.split(separator: "\n").contains(Substring("HID_UNIQ=\(serial)"))
        }
    }

    @Test func keyboardInterfacesAreNeverListed() async throws {
        let fd = open("/dev/uhid", O_RDWR | O_CLOEXEC)
        try #require(fd >= 0, "cannot open /dev/uhid (errno \(errno))")
        defer { close(fd) }
        let create = Self.keyboardCreateEvent(serial: "KEYBOARD1")
        try #require(create.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == create.count)
        // Wait (bounded) until the kernel has made the keyboard's hidraw node.
        for _ in 0..<200 where Self.hidrawNodes(serial: "KEYBOARD1").isEmpty {
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(Self.hidrawNodes(serial: "KEYBOARD1").count == 1, "the kernel made no hidraw node")

        let server = UHIDServer(
            handler: CTAPHIDTestHandler(tag: [0x11]), configuration: .init(serialNumber: "UHIDTEST3"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { group.cancelAll() }
            let key = try #require(try await Self.waitForKey(serial: "UHIDTEST3"))
            let listed = try await HIDDiscovery().devices()
            // The FIDO interface is listed, the keyboard (a real hidraw node too) is not.
            #expect(listed.map(\.uri) == [key.uri])
            #expect(!listed.contains { $0.serialNumber == "KEYBOARD1" })
            // Named directly, it is refused from its report descriptor, before any open(2).
            let keyboardNode = try #require(Self.hidrawNodes(serial: "KEYBOARD1").first)
            await #expect {
                _ = try await HIDDiscovery(openTimeout: .milliseconds(300)).open(uri: "hid:/dev/\(keyboardNode)")
            } throws: { ($0 as? TransportError)?.code == .notSupported }
        }
    }
}
