import CTAP2
import Foundation
import HIDTransport
import Testing
import Transport
import VirtualAuthenticator

/// `VirtualKeyServer`: the keys `securitykey virtual serve` runs, with their readiness documents.
@Suite struct VirtualKeyServerTests {
    /// Runs `server` until `body` returns, handing `body` the readiness documents.
    private func serving<T: Sendable>(
        _ server: VirtualKeyServer, _ body: @Sendable ([VirtualKeyReadiness]) async throws -> T
    ) async throws -> T {
        let (documents, ready) = AsyncStream<[VirtualKeyReadiness]>.makeStream()
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await server.run { ready.yield($0) }
                return nil
            }
            defer { group.cancelAll() }
            var iterator = documents.makeAsyncIterator()
            let announced = try #require(await iterator.next())
            return try await body(announced)
        }
    }

    @Test func manyUDPKeysAnswerWithTheAAGUIDTheirDocumentsName() async throws {
        let server = try VirtualKeyServer(
            settings: VirtualKeySettings(), transport: .udp(host: "127.0.0.1", port: 0), count: 3)
        try await serving(server) { documents in
            #expect(documents.count == 3)
            #expect(Set(documents.map(\.aaguid)).count == 3, "each key has its own AAGUID")
            for (document, port) in zip(documents, server.ports) {
                #expect(document.uri == "udp:127.0.0.1:\(port)")
                #expect(document.location == "over CTAPHID/UDP at udp:127.0.0.1:\(port)")
                // The readiness line as a JSON reader sees it.
                let line = Data(document.json.text().utf8)
                let object = try #require(try JSONSerialization.jsonObject(with: line) as? [String: Any])
                #expect(object["transport"] as? String == "udp")
                #expect(object["uri"] as? String == "udp:127.0.0.1:\(port)")
                #expect(object["aaguid"] as? String == document.aaguid)
                #expect(object["state"] is NSNull)
                #expect((object["pid"] as? NSNumber)?.int32Value == getpid())
                // authenticatorGetInfo over the key's own port: member 3 is the AAGUID, 16 bytes
                // (CTAP 2.1 §6.4), the one the document names.
                let aaguid = try #require(AAGUID(uuidString: document.aaguid))
                let connection = try await UDPDiscovery().open(
                    endpoint: UDPEndpoint(host: "127.0.0.1", port: port, localPort: 0), timeout: .seconds(10))
                let reply = try await connection.transact(.cbor, payload: [0x04], timeout: .seconds(10))
                await connection.close()
                #expect(reply.first == 0x00)
                let encoded: [UInt8] = [0x03, 0x50] + aaguid.bytes
                #expect(reply.indices.contains { reply[$0...].starts(with: encoded) })
            }
        }
    }

    @Test func aVPCDCardIsAnnouncedWithItsVPCDAddress() async throws {
        // Nothing listens on port 1: the card keeps trying to connect until cancelled.
        let server = try VirtualKeyServer(
            settings: VirtualKeySettings(), transport: .pcsc(vpcdHost: "127.0.0.1", vpcdPort: 1))
        try await serving(server) { documents in
            let document = try #require(documents.first)
            #expect(documents.count == 1)
            #expect(document.uri == nil)
            #expect(document.location == "to vpcd at 127.0.0.1:1")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(document.json.text().utf8)) as? [String: Any])
            #expect(object["transport"] as? String == "pcsc")
            #expect(object["vpcd"] as? String == "127.0.0.1:1")
            #expect(object["uri"] == nil)
            #expect(server.ports.isEmpty)
        }
    }

    @Test(arguments: [
        (VirtualKeyTransport.pcsc(vpcdHost: "127.0.0.1", vpcdPort: 1), 2, false),
        (.udp(host: "127.0.0.1", port: 0), 2, true),
        (.udp(host: "127.0.0.1", port: 0), 0, false),
        (.udp(host: "127.0.0.1", port: 0), VirtualKeyServer.maximumCount + 1, false),
        (.udp(host: "127.0.0.1", port: 65535), 2, false),
        (.uhid(serialNumber: "A=B"), 1, false),
        (.uhid(serialNumber: ""), 1, false),
        (.uhid(serialNumber: String(repeating: "S", count: 64)), 1, false),
    ])
    func refusesWhatCannotBeServed(transport: VirtualKeyTransport, count: Int, withStateFile: Bool) throws {
        let error = #expect(throws: VirtualKeyError.self) {
            _ = try VirtualKeyServer(
                settings: VirtualKeySettings(), transport: transport, count: count,
                stateFile: withStateFile ? "/nonexistent/never-written" : nil)
        }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func uhidSerialNumbersFollowTheKernelsRules() {
        #expect(VirtualKeyTransport.isValidSerialNumber("SKVIRTUAL-42"))
        #expect(VirtualKeyTransport.isValidSerialNumber(String(repeating: "S", count: 63)))
        #expect(!VirtualKeyTransport.isValidSerialNumber("two\nlines"))
        #expect(!VirtualKeyTransport.isValidSerialNumber("cl\u{e9}"))
    }
}
