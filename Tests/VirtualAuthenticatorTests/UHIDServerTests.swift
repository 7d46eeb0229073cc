import CTAPHID
import Foundation
import HIDTransport
import Testing
import Transport
import VirtualAuthenticator

/// The uhid server seen through a real hidraw node and hidapi. Runs only where /dev/uhid exists:
/// in the QEMU guest of `scripts/hidvm/test-uhid.sh` (this host's kernel has no uhid).
@Suite(.enabled(if: FileManager.default.fileExists(atPath: "/dev/uhid"), "needs /dev/uhid: run scripts/hidvm/test-uhid.sh"))
struct UHIDServerTests {
    /// Waits (up to 20 s: the guest is slow) for hidapi to list the virtual key.
    static func waitForKey(serial: String) async throws -> DeviceDescriptor? {
        for _ in 0..<200 {
            if let key = try await HIDDiscovery().devices().first(where: { $0.serialNumber == serial }) { return key }
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
            #expect(try await connection.transact(.cbor, payload: payload, timeout: .seconds(20)) == [0, 0x55] + payload)
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
