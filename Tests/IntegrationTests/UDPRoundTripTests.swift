import CTAP2
import Crypto
import HIDTransport
import Testing
import Transport
import VirtualAuthenticator
import WebAuthnVerification

/// Our host registers and signs in with the virtual key over CTAPHID/UDP (the firmware
/// emulator convention), with delayed presence so CTAPHID KEEPALIVE frames flow, and a
/// cancelled request stops the key waiting.
struct UDPRoundTripTests {
    private func withKey<T: Sendable>(
        _ key: VirtualKey, _ body: @Sendable (CTAPHIDConnection) async throws -> T
    ) async throws -> T {
        let server = try UDPCTAPHIDServer(handler: key, configuration: .init(port: 0))
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await server.run()
                return nil
            }
            defer { group.cancelAll() }
            let connection = try await UDPDiscovery().open(
                endpoint: UDPEndpoint(host: "127.0.0.1", port: server.port, localPort: 0),
                timeout: .seconds(60))
            defer { Task { await connection.close() } }
            return try await body(connection)
        }
    }

    @Test(arguments: [CTAP2.COSEAlgorithm.es256, .edDSA])
    func registerAndSignIn(_ algorithm: CTAP2.COSEAlgorithm) async throws {
        let key = try VirtualKey(userPresence: .approveAfter(.milliseconds(350)))
        try await withKey(key) { connection in
            #expect(connection.descriptor.transport == .udp)
            let session = CTAP2Session(connection: connection)
            let info = try await session.getInfo()
            #expect(info.aaguid.bytes == key.aaguid)
            let hash = Array(SHA256.hash(data: Array("udp registration".utf8)))
            let keepalives = Statuses()
            let registration = try await session.makeCredential(
                MakeCredentialRequest(
                    clientDataHash: hash, rp: RelyingPartyEntity(id: "example.org"),
                    user: UserEntity(id: [4, 5, 6], name: "anne"),
                    pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: algorithm)]),
                keepalive: { keepalives.append($0) })
            #expect(keepalives.values.contains(.userPresenceNeeded))
            _ = try registration.attestationObject.verify(clientDataHash: hash)
            let credential = try #require(registration.authData.attestedCredentialData)
            let assertionHash = Array(SHA256.hash(data: Array("udp assertion".utf8)))
            let assertion = try await session.getAssertion(
                GetAssertionRequest(
                    rpID: "example.org", clientDataHash: assertionHash,
                    allowList: [PublicKeyCredentialDescriptor(id: credential.credentialID)]))
            try assertion.verify(clientDataHash: assertionHash, publicKey: credential.credentialPublicKey)
        }
    }

    /// The session leaves queuing to a CTAPHID connection (one queue per exchange, issue 29):
    /// commands sent at once from many tasks still go one at a time, each answered whole and in
    /// full by the key (a second message on the channel mid-exchange would break both).
    @Test func concurrentCommandsWaitInTheConnectionsOneQueue() async throws {
        let key = try VirtualKey(userPresence: .approveAfter(.milliseconds(50)))
        try await withKey(key) { connection in
            #expect(connection.serializesTransactions)
            let session = CTAP2Session(connection: connection)
            let hash = Array(SHA256.hash(data: Array("concurrent".utf8)))
            let ids = try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
                for index in 0..<6 {
                    group.addTask {
                        if index % 2 == 0 {
                            let info = try await session.getInfo()
                            #expect(info.aaguid.bytes == key.aaguid)
                            return nil
                        }
                        let made = try await session.makeCredential(
                            MakeCredentialRequest(
                                clientDataHash: hash, rp: RelyingPartyEntity(id: "example.org"),
                                user: UserEntity(id: [UInt8(index)], name: "u\(index)"),
                                pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)]))
                        _ = try made.attestationObject.verify(clientDataHash: hash)
                        return made.authData.attestedCredentialData?.credentialID
                    }
                }
                var ids: [[UInt8]] = []
                for try await id in group { if let id { ids.append(id) } }
                return ids
            }
            #expect(ids.count == 3)
            #expect(Set(ids).count == 3)
        }
    }

    @Test func cancellingStopsTheKeyWaiting() async throws {
        let key = try VirtualKey(userPresence: .never)
        try await withKey(key) { connection in
            let session = CTAP2Session(connection: connection)
            _ = try await session.getInfo()
            let request = MakeCredentialRequest(
                clientDataHash: Array(repeating: 1, count: 32), rp: RelyingPartyEntity(id: "example.org"),
                user: UserEntity(id: [1], name: "anne"),
                pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)])
            let waiting = Task { try await session.makeCredential(request) }
            try await Task.sleep(for: .milliseconds(300))
            waiting.cancel()
            let result = await waiting.result
            // Cancelled, not timed out: the cancel reached the key, which gave up waiting.
            let error = #expect(throws: CTAP2Error.self) { try result.get() }
            #expect(
                error?.code == .cancelled || error?.status == .keepaliveCancel, "\(String(describing: error))"
            )
            // The key is free again: the next request is answered.
            await key.setUserPresence(.approve)
            _ = try await session.makeCredential(request)
        }
    }
}
