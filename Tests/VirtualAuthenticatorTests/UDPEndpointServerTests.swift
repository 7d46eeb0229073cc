import CTAPHID
import HIDTransport
import Testing
import Transport
import VirtualAuthenticator

/// Our UDP host side against the virtual key's UDP server: several host processes' worth of
/// clients at once without `?local=`, host names, IPv6, and discovery events.
@Suite(.timeLimit(.minutes(1))) struct UDPEndpointServerTests {
    @Test func twoClientsWithoutLocalPortTalkAtOnce() async throws {
        let handler = CTAPHIDTestHandler(tag: [0x77])
        try await withUDPServer(handler) { server in
            let endpoint = UDPEndpoint(host: "127.0.0.1", port: server.port)
            #expect(endpoint.localPort == nil)
            let first = try await UDPReportPipe.open(endpoint: endpoint, deadline: .after(.seconds(5)))
            let second = try await UDPReportPipe.open(endpoint: endpoint, deadline: .after(.seconds(5)))
            #expect(first.localPort != second.localPort)
            #expect(first.localPort != 0 && second.localPort != 0)
            // Whoever holds 7112 now (the first pipe, or another program), nobody may share it.
            await #expect {
                _ = try await UDPReportPipe.open(
                    endpoint: UDPEndpoint(port: server.port, localPort: UDPEndpoint.defaultLocalPort),
                    deadline: .after(.seconds(5)))
            } throws: { ($0 as? TransportError)?.code == .busy }

            let descriptor = DeviceDescriptor(uri: endpoint.uri, transport: .udp)
            let a = try await CTAPHIDConnection.open(
                pipe: first, descriptor: descriptor, timeout: .seconds(10))
            let b = try await CTAPHIDConnection.open(
                pipe: second, descriptor: descriptor, timeout: .seconds(10))
            async let replyA = a.transact(.cbor, payload: [0x0A], timeout: .seconds(10))
            async let replyB = b.transact(.cbor, payload: [0x0B], timeout: .seconds(10))
            #expect(try await replyA == [0x00, 0x77, 0x0A])
            #expect(try await replyB == [0x00, 0x77, 0x0B])
            await a.close()
            await b.close()
        }
    }

    @Test func hostNameLocalhost() async throws {
        try await withUDPServer(CTAPHIDTestHandler(tag: [1])) { server in
            let connection = try await UDPDiscovery().open(uri: "udp:localhost:\(server.port)")
            #expect(connection.descriptor.uri == "udp:localhost:\(server.port)")
            #expect(
                try await connection.transact(.cbor, payload: [0x04], timeout: .seconds(10)) == [0, 1, 4])
            await connection.close()
        }
    }

    @Test func ipv6Loopback() async throws {
        let server = try UDPCTAPHIDServer(
            handler: CTAPHIDTestHandler(tag: [6]), configuration: .init(host: "::1", port: 0))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let connection = try await UDPDiscovery().open(uri: "udp:[::1]:\(server.port)")
            #expect(
                try await connection.transact(.cbor, payload: [0x04], timeout: .seconds(10)) == [0, 6, 4])
            await connection.close()
            // The server listens on ::1 only: the same port on 127.0.0.1 has nobody.
            let missing = UDPDiscovery(endpoints: [UDPEndpoint(port: server.port, localPort: 0)])
            #expect(try await missing.devices().isEmpty)
            group.cancelAll()
        }
    }

    @Test func unknownHostIsNoDevice() async {
        await #expect {
            _ = try await UDPDiscovery().open(uri: "udp:no-such-host.invalid:8111?local=0")
        } throws: { [.noDevice, .timeout].contains(($0 as? TransportError)?.code) }
    }

    @Test func eventsReportArrivalAndRemoval() async throws {
        let first = try UDPCTAPHIDServer(handler: CTAPHIDTestHandler(), configuration: .init(port: 0))
        let second = try UDPCTAPHIDServer(handler: CTAPHIDTestHandler(), configuration: .init(port: 0))
        // Explicit local ports: a missed INIT answer then means "absent" whatever holds 7112.
        let endpoints = [first, second].map { UDPEndpoint(port: $0.port, localPort: 0) }
        // A probe long enough that a busy machine does not make the serving key look absent.
        let discovery = UDPDiscovery(endpoints: endpoints, probeTimeout: .milliseconds(1500))
        let firstRun = Task { try await first.run() }
        defer { firstRun.cancel() }
        var events = discovery.events().makeAsyncIterator()
        // The second server is bound but not serving yet: only the first arrives.
        #expect(
            await events.next()
                == .arrived(
                    DeviceDescriptor(
                        uri: endpoints[0].uri, transport: .udp, product: "CTAPHID over UDP")))
        let secondRun = Task { try await second.run() }
        defer { secondRun.cancel() }
        #expect(
            await events.next()
                == .arrived(
                    DeviceDescriptor(
                        uri: endpoints[1].uri, transport: .udp, product: "CTAPHID over UDP")))
        firstRun.cancel()
        #expect(await events.next() == .removed(uri: endpoints[0].uri))
    }

    @Test func eventsWithoutEndpointsEnd() async {
        var events = UDPDiscovery(endpoints: []).events().makeAsyncIterator()
        #expect(await events.next() == nil)
    }
}
