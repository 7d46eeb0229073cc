import HIDTransport
import Testing
import Transport

/// The `udp:` device URI (host names, IPv4, bracketed IPv6 per RFC 3986 §3.2.2) and the
/// endpoint list of `SECURITYKEY_UDP` / `--udp`.
@Suite struct UDPEndpointTests {
    @Test(arguments: [
        ("udp:127.0.0.1:8111", "127.0.0.1", UInt16(8111), UInt16?.none),
        ("udp:127.0.0.1:8111?local=7112", "127.0.0.1", 8111, 7112),
        ("udp:127.0.0.1:9000?local=0", "127.0.0.1", 9000, 0),
        ("udp:10.1.2.3:65535?local=40000", "10.1.2.3", 65535, 40000),
        ("udp:localhost:8111", "localhost", 8111, nil),
        ("udp:key-1.example.org:8111?local=0", "key-1.example.org", 8111, 0),
        ("udp:[::1]:8111", "::1", 8111, nil),
        ("udp:[fe80::1:2]:9?local=7", "fe80::1:2", 9, 7),
        ("udp:[::ffff:127.0.0.1]:8111", "::ffff:127.0.0.1", 8111, nil),
    ])
    func parses(uri: String, host: String, port: UInt16, local: UInt16?) throws {
        let endpoint = try UDPEndpoint(uri: uri)
        #expect(endpoint.host == host)
        #expect(endpoint.port == port)
        #expect(endpoint.localPort == local)
        #expect(endpoint.uri == uri)
        #expect(try UDPEndpoint(uri: endpoint.uri) == endpoint)
    }

    @Test(arguments: [
        "udp:", "udp:127.0.0.1", "udp:127.0.0.1:0", "udp:127.0.0.1:70000", "udp:127.0.0.1:+80",
        "udp:127.0.0.1:8111?local=", "udp:127.0.0.1:8111?remote=1", "udp:127.0.0.1:8111?local=1&local=2",
        "udp:127.0.0.1:8111?local=+1", "udp:127.0.0.1:8111?local=65536", "udp:1.2.3:8111",
        "hid:/dev/hidraw0", "udp:256.0.0.1:8111", "udp:::1:8111", "udp:[::1]", "udp:[]:8111",
        "udp:[localhost]:8111", "udp:[::1:8111", "udp:::1]:8111", "udp:[::1%eth0]:8111",
        "udp:-bad.example:8111", "udp:bad-.example:8111", "udp:a..b:8111", "udp:a_b:8111",
        "udp:exämple.org:8111", "udp:host name:8111", "udp::8111", "UDP:127.0.0.1:8111",
        "udp:" + String(repeating: "a", count: 64) + ".org:8111",
        "udp:" + String(repeating: "abcdefg.", count: 32) + "org:8111",
    ])
    func rejects(uri: String) {
        #expect { try UDPEndpoint(uri: uri) } throws: { ($0 as? TransportError)?.code == .invalidURI }
    }

    @Test func defaultsFollowTheEmulatorConvention() {
        #expect(UDPEndpoint().uri == "udp:127.0.0.1:8111")
        #expect(UDPEndpoint().localPort == nil)
        #expect(UDPEndpoint.defaultLocalPort == 7112)
        #expect(UDPDiscovery().scheme == "udp")
    }

    @Test func listParsesBareAndFullItems() throws {
        let list = try UDPEndpoint.list(
            parsing: " 127.0.0.1:8111, udp:localhost:9000?local=0,[::1]:8112 ,udp:[::1]:8113,key.example:1")
        #expect(
            list == [
                UDPEndpoint(host: "127.0.0.1", port: 8111),
                UDPEndpoint(host: "localhost", port: 9000, localPort: 0),
                UDPEndpoint(host: "::1", port: 8112),
                UDPEndpoint(host: "::1", port: 8113),
                UDPEndpoint(host: "key.example", port: 1),
            ])
        #expect(try UDPEndpoint.list(parsing: "") == [])
        #expect(try UDPEndpoint.list(parsing: "  ") == [])
        // The same endpoint twice is probed once.
        #expect(try UDPEndpoint.list(parsing: "127.0.0.1:1,udp:127.0.0.1:1") == [UDPEndpoint(port: 1)])
    }

    @Test func listExpandsPortRanges() throws {
        // `--udp HOST:P1-P2` (issue 34): every port of the range, in order, beside single ones.
        #expect(
            try UDPEndpoint.list(parsing: "127.0.0.1:8111-8113, [::1]:9000-9000,udp:localhost:7000-7001")
                == [
                    UDPEndpoint(port: 8111), UDPEndpoint(port: 8112), UDPEndpoint(port: 8113),
                    UDPEndpoint(host: "::1", port: 9000), UDPEndpoint(host: "localhost", port: 7000),
                    UDPEndpoint(host: "localhost", port: 7001),
                ])
        #expect(try UDPEndpoint.list(parsing: "127.0.0.1:1-64").count == 64)
    }

    @Test(arguments: [
        "127.0.0.1:8113-8111", "127.0.0.1:0-3", "127.0.0.1:1-65", "127.0.0.1:8111-", "127.0.0.1:-8111",
        "127.0.0.1:1-2-3", "127.0.0.1:60000-70000", "127.0.0.1:1-40,127.0.0.1:100-130",
    ])
    func listRejectsBadRanges(text: String) {
        #expect { try UDPEndpoint.list(parsing: text) } throws: {
            ($0 as? TransportError)?.code == .invalidURI
        }
    }

    @Test(arguments: [
        "127.0.0.1", "127.0.0.1:8111,", ",127.0.0.1:8111", "127.0.0.1:8111,,localhost:1", "::1:8111",
        "hid:/dev/hidraw0", "udp:", "localhost:0", "pcsc:0",
        Array(repeating: "127.0.0.1:1", count: 65).joined(separator: ","),
    ])
    func listRejects(text: String) {
        #expect { try UDPEndpoint.list(parsing: text) } throws: {
            ($0 as? TransportError)?.code == .invalidURI
        }
    }

    /// An endpoint listed as a device: its URI as written, the udp transport, and the product
    /// name the fleet and the discovery report for it.
    @Test func descriptor() throws {
        let descriptor = try UDPEndpoint(uri: "udp:[::1]:8111?local=0").descriptor
        #expect(descriptor.uri == "udp:[::1]:8111?local=0")
        #expect(descriptor.transport == .udp)
        #expect(descriptor.product == "CTAPHID over UDP")
    }
}
