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

/// The `udp:` device URI of the firmware-emulator convention.
@Suite struct UDPEndpointTests {
    @Test(arguments: [
        ("udp:127.0.0.1:8111", "127.0.0.1", UInt16(8111), UInt16(7112)),
        ("udp:127.0.0.1:8111?local=7112", "127.0.0.1", 8111, 7112),
        ("udp:127.0.0.1:9000?local=0", "127.0.0.1", 9000, 0),
        ("udp:10.1.2.3:65535?local=40000", "10.1.2.3", 65535, 40000),
    ])
    func parses(uri: String, host: String, port: UInt16, local: UInt16) throws {
        let endpoint = try UDPEndpoint(uri: uri)
        #expect(endpoint.host == host)
        #expect(endpoint.port == port)
        #expect(endpoint.localPort == local)
        #expect(try UDPEndpoint(uri: endpoint.uri) == endpoint)
    }

    @Test(arguments: [
        "udp:", "udp:127.0.0.1", "udp:127.0.0.1:0", "udp:127.0.0.1:70000", "udp:localhost:8111",
        "udp:127.0.0.1:8111?local=", "udp:127.0.0.1:8111?remote=1", "udp:1.2.3:8111", "hid:/dev/hidraw0",
        "udp:256.0.0.1:8111",
    ])
    func rejects(uri: String) {
        #expect { try UDPEndpoint(uri: uri) } throws: { ($0 as? TransportError)?.code == .invalidURI }
    }

    @Test func defaultsFollowTheEmulatorConvention() {
        #expect(UDPEndpoint().uri == "udp:127.0.0.1:8111")
        #expect(UDPDiscovery().scheme == "udp")
    }
}
