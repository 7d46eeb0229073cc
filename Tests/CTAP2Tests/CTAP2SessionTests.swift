import CBOR
import Synchronization
import Testing
import Transport

@testable import CTAP2

/// A connection that replays recorded replies and records what it was sent.
final class ReplayConnection: AuthenticatorConnection {
    struct State {
        var replies: [Result<[UInt8], TransportError>]
        var requests: [[UInt8]] = []
        var inFlight = 0
        var maxInFlight = 0
    }

    let descriptor = DeviceDescriptor(uri: "replay:", transport: .inProcess)
    let capabilities: TransportCapabilities = [.cbor]
    let state: Mutex<State>
    let keepalives: [KeepaliveStatus]

    init(_ replies: [Result<[UInt8], TransportError>], keepalives: [KeepaliveStatus] = []) {
        state = Mutex(State(replies: replies))
        self.keepalives = keepalives
    }

    var requests: [[UInt8]] { state.withLock { $0.requests } }
    var maxInFlight: Int { state.withLock { $0.maxInFlight } }

    func transact(
        _ command: TransportCommand, payload: [UInt8], deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        guard command == .cbor else { throw TransportError(.notSupported, "Only CBOR is replayed.") }
        state.withLock {
            $0.requests.append(payload)
            $0.inFlight += 1
            $0.maxInFlight = max($0.maxInFlight, $0.inFlight)
        }
        for status in keepalives { keepalive(status) }
        // Give any other caller the chance to interleave, which the session must prevent.
        for _ in 0..<10 { await Task.yield() }
        let next: Result<[UInt8], TransportError> = state.withLock {
            $0.inFlight -= 1
            return $0.replies.isEmpty
                ? .failure(TransportError(.noDevice, "No reply left.")) : $0.replies.removeFirst()
        }
        return try next.get()
    }

    func close() async {}
}

@Suite struct CTAP2SessionTests {
    static var info: [UInt8] { Vectors.python("test_ctap2/module/_INFO")?.bytes ?? [] }
    static var makeCredentialReply: [UInt8] { Vectors.python("test_ctap2/module/_MC_RESP")?.bytes ?? [] }
    static var getAssertionReply: [UInt8] { Vectors.python("test_ctap2/module/_GA_RESP")?.bytes ?? [] }

    static func makeCredentialRequest() throws -> MakeCredentialRequest {
        MakeCredentialRequest(
            clientDataHash: try #require(
                Vectors.python(
                    "test_ctap2/TestAttestationObject.test_packed_attestation/arg-of:Attestation.for_type(att.fmt)().verify"
                )
            ).bytes,
            rp: RelyingPartyEntity(id: "example.com", name: "Example RP"),
            user: UserEntity(id: [1, 2, 3, 4], name: "user@example.com", displayName: "A. User"),
            pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)])
    }

    @Test func getInfoThenMakeCredential() async throws {
        let conn = ReplayConnection(
            [.success([0x00] + Self.info), .success([0x00] + Self.makeCredentialReply)],
            keepalives: [.processing, .userPresenceNeeded])
        let session = CTAP2Session(connection: conn)
        let info = try await session.getInfo()
        #expect(info.maxMsgSize == 1200)
        let seen = Mutex<[KeepaliveStatus]>([])
        let request = try Self.makeCredentialRequest()
        let response = try await session.makeCredential(request) { status in
            seen.withLock { $0.append(status) }
        }
        #expect(response.format == .packed)
        #expect(response.authData.bytes == Vectors.python("test_ctap2/module/_AUTH_DATA_MC")?.bytes)
        #expect(seen.withLock { $0 } == [.processing, .userPresenceNeeded])
        #expect(conn.requests == [[0x04], try request.encoded()])
    }

    @Test func getAssertionAndNext() async throws {
        let conn = ReplayConnection([
            .success([0x00] + Self.getAssertionReply), .success([0x00] + Self.getAssertionReply),
        ])
        let session = CTAP2Session(connection: conn)
        let request = GetAssertionRequest(
            rpID: "example.com", clientDataHash: [UInt8](repeating: 9, count: 32),
            allowList: [PublicKeyCredentialDescriptor(id: [1, 2, 3])])
        let first = try await session.getAssertion(request)
        #expect(first.signature == Vectors.python("test_ctap2/module/_SIGNATURE")?.bytes)
        _ = try await session.getNextAssertion()
        #expect(conn.requests == [try request.encoded(), [0x08]])
    }

    @Test(arguments: [
        (CTAPStatus.pinInvalid, CTAP2Error.Code.pinInvalid), (.noCredentials, .noCredentials),
        (.keepaliveCancel, .keepaliveCancel), (CTAPStatus(rawValue: 0xF3), .authenticatorStatus),
    ])
    func statusByteBecomesTypedError(_ status: CTAPStatus, _ code: CTAP2Error.Code) async throws {
        let session = CTAP2Session(connection: ReplayConnection([.success([status.rawValue])]))
        let error = await #expect(throws: CTAP2Error.self) { try await session.reset() }
        #expect(error?.code == code)
        #expect(error?.status == status)
    }

    @Test func resetAndSelectionSendTheirCommandBytes() async throws {
        let conn = ReplayConnection([.success([0x00]), .success([0x00])])
        let session = CTAP2Session(connection: conn)
        try await session.reset()
        try await session.selection()
        #expect(conn.requests == [[0x07], [0x0B]])
    }

    @Test func replyLargerThanMaxMsgSizeIsRejected() async throws {
        let huge = [0x00] + CBOREncoder.encode(.map([1: .byteString([UInt8](repeating: 0, count: 1300))]))
        let conn = ReplayConnection([.success([0x00] + Self.info), .success(huge)])
        let session = CTAP2Session(connection: conn)
        _ = try await session.getInfo()
        let error = await #expect(throws: CTAP2Error.self) { try await session.getNextAssertion() }
        #expect(error?.code == .messageTooLarge)
    }

    @Test func requestLargerThanMaxMsgSizeIsNotSent() async throws {
        let conn = ReplayConnection([.success([0x00] + Self.info)])
        let session = CTAP2Session(connection: conn)
        _ = try await session.getInfo()
        var request = try Self.makeCredentialRequest()
        request.excludeList = (0..<20).map { _ in
            PublicKeyCredentialDescriptor(id: [UInt8](repeating: 1, count: 64))
        }
        let error = await #expect(throws: CTAP2Error.self) { try await session.makeCredential(request) }
        #expect(error?.code == .messageTooLarge)
        #expect(conn.requests == [[0x04]])
    }

    @Test func transportErrorsAndEmptyRepliesAreTyped() async throws {
        let conn = ReplayConnection([
            .failure(TransportError(.timeout, "Timed out.")),
            .failure(TransportError(.cancelled, "Cancelled.")),
            .success([]), .success([0x00, 0xFF]),
        ])
        let session = CTAP2Session(connection: conn)
        let timeout = await #expect(throws: CTAP2Error.self) { try await session.getInfo() }
        #expect(timeout?.code == .transport)
        #expect((timeout?.underlying as? TransportError)?.code == .timeout)
        let cancelled = await #expect(throws: CTAP2Error.self) { try await session.getInfo() }
        #expect(cancelled?.code == .cancelled)
        let empty = await #expect(throws: CTAP2Error.self) { try await session.getInfo() }
        #expect(empty?.code == .malformedResponse)
        let garbage = await #expect(throws: CTAP2Error.self) { try await session.getInfo() }
        #expect(garbage?.code == .malformedResponse)
        #expect(garbage?.underlying is CBORError)
    }

    @Test func transactionsDoNotInterleave() async throws {
        let replies = (0..<8).map { _ in Result<[UInt8], TransportError>.success([0x00] + Self.info) }
        let conn = ReplayConnection(replies)
        let session = CTAP2Session(connection: conn)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { _ = try await session.getInfo() } }
            try await group.waitForAll()
        }
        #expect(conn.requests.count == 8)
        #expect(conn.maxInFlight == 1)
    }

    @Test func invalidRequestsAreRefusedBeforeSending() async throws {
        let conn = ReplayConnection([])
        let session = CTAP2Session(connection: conn)
        var request = try Self.makeCredentialRequest()
        request.clientDataHash = [1, 2, 3]
        let error = await #expect(throws: CTAP2Error.self) { try await session.makeCredential(request) }
        #expect(error?.code == .invalidRequest)
        #expect(conn.requests.isEmpty)
    }
}
