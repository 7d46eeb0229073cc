import HIDTransport
import Testing
import Transport

/// hidapi enumeration and opening on a host without security keys (this CI has no hidraw).
@Suite struct HIDDiscoveryTests {
    @Test func enumerationWithoutKeysIsEmpty() async throws {
        // The host has no /dev/hidraw nodes at all, so no FIDO interface can be listed.
        let discovery = HIDDiscovery()
        #expect(discovery.scheme == "hid")
        #expect(try await discovery.devices().isEmpty)
    }

    @Test(arguments: [
        ("hid:/dev/hidraw99", TransportError.Code.noDevice),
        ("hid:/dev/null", .invalidURI),
        ("hid:/dev/hidrawX", .invalidURI),
        ("hid:", .invalidURI),
        ("udp:127.0.0.1:8111", .invalidURI),
    ])
    func openFailsWithATypedError(uri: String, code: TransportError.Code) async {
        await #expect {
            _ = try await HIDDiscovery(openTimeout: .milliseconds(200)).open(uri: uri)
        } throws: { ($0 as? TransportError)?.code == code }
    }
}
