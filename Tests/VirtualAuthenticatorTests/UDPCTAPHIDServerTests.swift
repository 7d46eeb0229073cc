import CTAPHID
import Foundation
import HIDTransport
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// Test handlers for the CTAPHID servers: echo, delayed with keepalives, cancel-aware.
final class CTAPHIDTestHandler: CTAPMessageHandler {
    /// Answers CBOR with status 0 + `tag` + the request, after `delay` (waiting "for a touch").
    let tag: [UInt8]
    let delay: Duration
    let cancelled = Mutex<Int>(0)
    let winks = Mutex<Int>(0)

    init(tag: [UInt8] = [], delay: Duration = .zero) {
        self.tag = tag
        self.delay = delay
    }

    func handleCBOR(_ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async
        -> [UInt8]
    {
        if delay > .zero {
            keepalive(.userPresenceNeeded)
            do {
                try await Task.sleep(for: delay)
            } catch {
                cancelled.withLock { $0 += 1 }
                return [0x2D]  // CTAP2_ERR_KEEPALIVE_CANCEL
            }
        }
        return [0x00] + tag + message
    }

    func handleU2F(_ apdu: [UInt8]) async -> [UInt8] { apdu + [0x90, 0x00] }
    func powerCycle() async {}
    func wink() async { winks.withLock { $0 += 1 } }
}

/// Runs a UDP server for the duration of `body`, then cancels it.
func withUDPServer<T: Sendable>(
    // Generous by default: a 7000-byte message is 118 datagrams, and a loaded 2-core machine
    // can pause the sender longer than a real key's 500 ms between two of them.
    _ handler: CTAPHIDTestHandler, messageTimeout: Duration = .seconds(5),
    _ body: @Sendable (UDPCTAPHIDServer) async throws -> T
) async throws -> T {
    let server = try UDPCTAPHIDServer(
        handler: handler, configuration: .init(port: 0, messageTimeout: messageTimeout))
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            try await server.run()
            return nil
        }
        defer { group.cancelAll() }
        return try await body(server)
    }
}

/// The calling thread's name as Linux keeps it (`/proc/thread-self/comm`, at most 15 bytes).
private func threadName() -> String {
    (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
        .trimmingCharacters(in: .newlines) ?? ""
}

func openUDP(_ server: UDPCTAPHIDServer) async throws -> CTAPHIDConnection {
    let endpoint = UDPEndpoint(host: "127.0.0.1", port: server.port, localPort: 0)
    return try await UDPDiscovery().open(endpoint: endpoint, timeout: .seconds(10))
}

@Suite struct UDPCTAPHIDServerTests {
    /// UDP pipes share one I/O loop that waits on every socket at once (a fleet of keys costs
    /// one thread); a caller that asks for the connection's executor gets a thread of the pipe's
    /// own, and there its exchanges run in place: the same answers, keepalives and cancellation,
    /// with the caller's code on that thread before and after each one.
    @Test func udpConnectionsRunInPlaceOnTheirOwnThread() async throws {
        let handler = CTAPHIDTestHandler(delay: .milliseconds(300))
        let statuses = Mutex<[KeepaliveStatus]>([])
        try await withUDPServer(handler) { server in
            let connection = try await openUDP(server)
            // Asked from the pool first: the pipe works through the shared loop as before.
            #expect(try await connection.ping([1, 2, 3]) == [1, 2, 3])
            let executor = try #require(connection.preferredTaskExecutor)
            let payload = (0..<7000).map { UInt8(truncatingIfNeeded: $0 &* 29) }
            let (reply, ping, names) = try await withTaskExecutorPreference(executor) {
                let before = threadName()
                let reply = try await connection.transact(
                    .cbor, payload: payload, deadline: .after(.seconds(10)),
                    keepalive: { status in statuses.withLock { $0.append(status) } })
                let middle = threadName()
                let ping = try await connection.ping([4, 5])
                return (reply, ping, [before, middle, threadName()])
            }
            #expect(reply == [0] + payload)
            #expect(ping == [4, 5])
            // Linux keeps 15 bytes of a thread's name: "udp 127.0.0.1:P".
            #expect(names.allSatisfy { $0.hasPrefix("udp 127.0.0.1") }, "\(names)")
            #expect(!statuses.withLock { $0 }.isEmpty)
            // And from the pool again, on the same connection.
            #expect(try await connection.ping([6]) == [6])
            await connection.close()
        }
    }

    @Test func cancellingAnExchangeInPlaceStopsIt() async throws {
        let handler = CTAPHIDTestHandler(delay: .seconds(20))
        try await withUDPServer(handler) { server in
            let connection = try await openUDP(server)
            let executor = try #require(connection.preferredTaskExecutor)
            let (started, continuation) = AsyncStream.makeStream(of: Void.self)
            let request = Task(executorPreference: executor) {
                try await connection.transact(
                    .cbor, payload: [0x02], deadline: .after(.seconds(30)),
                    keepalive: { _ in continuation.yield() })
            }
            for await _ in started { break }
            let clock = ContinuousClock()
            let cancelledAt = clock.now
            request.cancel()
            await #expect { try await request.value } throws: { ($0 as? TransportError)?.code == .cancelled }
            // A wait in place ends at its read slice (CTAPHIDConnection.readSlice, 100 ms).
            #expect(cancelledAt.duration(to: clock.now) < .seconds(5))
            let next = try await withTaskExecutorPreference(executor) { try await connection.ping([7]) }
            #expect(next == [7])
            for _ in 0..<250 where handler.cancelled.withLock({ $0 }) == 0 {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(handler.cancelled.withLock { $0 } == 1)
            await connection.close()
        }
    }

    @Test func echoPingWinkAndU2F() async throws {
        let handler = CTAPHIDTestHandler()
        try await withUDPServer(handler) { server in
            let connection = try await openUDP(server)
            #expect(connection.capabilities == [.cbor, .wink])
            let payload = (0..<7000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
            #expect(
                try await connection.transact(.cbor, payload: payload, timeout: .seconds(10)) == [0] + payload
            )
            #expect(try await connection.ping([9, 8, 7]) == [9, 8, 7])
            #expect(
                try await connection.transact(.u2f, payload: [0, 3, 0, 0], timeout: .seconds(10)) == [
                    0, 3, 0, 0, 0x90, 0,
                ])
            try await connection.wink()
            await connection.close()
        }
        #expect(handler.winks.withLock { $0 } == 1)
    }

    @Test func keepalivesWhileWaitingForPresence() async throws {
        let handler = CTAPHIDTestHandler(delay: .milliseconds(400))
        let statuses = Mutex<[KeepaliveStatus]>([])
        try await withUDPServer(handler) { server in
            let connection = try await openUDP(server)
            let reply = try await connection.transact(
                .cbor, payload: [0x04], deadline: .after(.seconds(10)),
                keepalive: { status in statuses.withLock { $0.append(status) } })
            #expect(reply == [0x00, 0x04])
        }
        let seen = statuses.withLock { $0 }
        #expect(!seen.isEmpty)
        #expect(seen.allSatisfy { $0 == .userPresenceNeeded })
    }

    @Test func cancelStopsTheHandlerAndTheNextRequestWorks() async throws {
        let handler = CTAPHIDTestHandler(delay: .seconds(20))
        try await withUDPServer(handler) { server in
            let connection = try await openUDP(server)
            let (started, continuation) = AsyncStream.makeStream(of: Void.self)
            let request = Task {
                try await connection.transact(
                    .cbor, payload: [0x02], deadline: .after(.seconds(30)),
                    keepalive: { _ in continuation.yield() })
            }
            for await _ in started { break }
            request.cancel()
            await #expect { try await request.value } throws: { ($0 as? TransportError)?.code == .cancelled }
            // The server must have cancelled the handler; the next request then goes through
            // (answered by a fresh handler call, which also waits, so use PING).
            #expect(try await connection.ping([1]) == [1])
            for _ in 0..<250 where handler.cancelled.withLock({ $0 }) == 0 {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(handler.cancelled.withLock { $0 } == 1)
        }
    }

    @Test func secondHostIsHeldOffThenServed() async throws {
        let handler = CTAPHIDTestHandler(delay: .milliseconds(300))
        try await withUDPServer(handler) { server in
            let first = try await openUDP(server)
            let second = try await openUDP(server)
            async let a = first.transact(.cbor, payload: [0xA], timeout: .seconds(10))
            try await Task.sleep(for: .milliseconds(50))
            // The second host gets ERR_CHANNEL_BUSY until the first is done, and retries.
            async let b = second.transact(.cbor, payload: [0xB], timeout: .seconds(10))
            #expect(try await a == [0, 0xA])
            #expect(try await b == [0, 0xB])
        }
    }

    @Test func fleetOfKeysAnswersEachToItsOwnHost() async throws {
        let count = 12
        let handlers = (0..<count).map { CTAPHIDTestHandler(tag: [UInt8($0)]) }
        let servers = try handlers.map { try UDPCTAPHIDServer(handler: $0, configuration: .init(port: 0)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for server in servers { group.addTask { try await server.run() } }
            try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { hosts in
                for (index, server) in servers.enumerated() {
                    hosts.addTask {
                        let connection = try await openUDP(server)
                        let reply = try await connection.transact(
                            .cbor, payload: [0x04], timeout: .seconds(10))
                        await connection.close()
                        return (index, reply)
                    }
                }
                for try await (index, reply) in hosts {
                    #expect(reply == [0x00, UInt8(index), 0x04])
                }
            }
            group.cancelAll()
        }
    }

    @Test func unknownEndpointFailsWithATypedError() async throws {
        // Nothing listens on the port of a server that was just closed.
        let port = try UDPCTAPHIDServer(handler: CTAPHIDTestHandler(), configuration: .init(port: 0)).port
        let discovery = UDPDiscovery(
            endpoints: [UDPEndpoint(port: port, localPort: 0)], probeTimeout: .milliseconds(200))
        #expect(try await discovery.devices().isEmpty)
        await #expect {
            _ = try await discovery.open(
                endpoint: UDPEndpoint(port: port, localPort: 0), timeout: .milliseconds(300))
        } throws: { [.timeout, .noDevice].contains(($0 as? TransportError)?.code) }
    }
}

@Suite struct UDPCTAPHIDServerReplyPortTests {
    @Test func fixedReplyPortFollowsTheEmulatorConvention() async throws {
        // A free port for the "host" side, learned by binding and releasing it.
        let replyPort = try UDPCTAPHIDServer(handler: CTAPHIDTestHandler(), configuration: .init(port: 0))
            .port
        let server = try UDPCTAPHIDServer(
            handler: CTAPHIDTestHandler(), configuration: .init(port: 0, replyPort: replyPort))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let sender = try UDPReportPipe(endpoint: UDPEndpoint(port: server.port, localPort: 0))
            let listener = try UDPReportPipe(endpoint: UDPEndpoint(port: server.port, localPort: replyPort))
            // CTAPHID_INIT on the broadcast channel with nonce 01..08, laid out per CTAP 2.1 §11.2.9.1.3.
            var request: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x86, 0x00, 0x08, 1, 2, 3, 4, 5, 6, 7, 8]
            request += Array(repeating: 0, count: 64 - request.count)
            try await sender.write(request)
            var reply: [UInt8]?
            for _ in 0..<100 where reply == nil {
                reply = try await listener.read(timeout: .milliseconds(100))
            }
            let answer = try #require(reply)
            #expect(Array(answer.prefix(7)) == [0xFF, 0xFF, 0xFF, 0xFF, 0x86, 0x00, 0x11])
            #expect(Array(answer[7..<15]) == [1, 2, 3, 4, 5, 6, 7, 8])
            #expect(try await sender.read(timeout: .milliseconds(100)) == nil)
            await sender.close()
            await listener.close()
            group.cancelAll()
        }
    }
}
