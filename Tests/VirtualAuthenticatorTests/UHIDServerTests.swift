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
