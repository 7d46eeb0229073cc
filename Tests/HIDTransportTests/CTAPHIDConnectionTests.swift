import CTAPHID
import HIDTransport
import Synchronization
import Testing
import Transport

/// The host-side connection against in-memory devices, well-behaved and hostile.
@Suite struct CTAPHIDConnectionTests {
    static let descriptor = DeviceDescriptor(uri: "memory:test", transport: .inProcess)
    static let request: [UInt8] = [0x04]

    static func open(_ pipe: MemoryReportPipe) async throws -> CTAPHIDConnection {
        try await CTAPHIDConnection.open(pipe: pipe, descriptor: descriptor, timeout: .seconds(10))
    }

    /// The recovery check: the next transaction on the same connection succeeds.
    static func expectRecovery(_ connection: CTAPHIDConnection, _ label: String) async {
        let payload: [UInt8] = (0..<200).map { UInt8($0) }
        do {
            let reply = try await connection.transact(.cbor, payload: payload, timeout: .seconds(10))
            #expect(reply == [0x00] + payload, "recovery after \(label)")
        } catch {
            Issue.record("no recovery after \(label): \(error)")
        }
    }

    @Test func echoesAcrossManyReports() async throws {
        let pipe = MemoryReportPipe()
        let connection = try await Self.open(pipe)
        #expect(connection.capabilities == [.cbor, .wink])
        let payload = (0..<7608).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let reply = try await connection.transact(.cbor, payload: payload, timeout: .seconds(10))
        #expect(reply == [0x00] + payload)
        #expect(try await connection.ping([1, 2, 3]) == [1, 2, 3])
        try await connection.wink()
    }

    @Test func oversizedRequestIsRefusedBeforeSending() async throws {
        let connection = try await Self.open(MemoryReportPipe())
        await #expect(throws: TransportError.self) {
            _ = try await connection.transact(
                .cbor, payload: Array(repeating: 0, count: 7610), timeout: .seconds(1))
        }
        await Self.expectRecovery(connection, "an oversized request")
    }

    @Test func u2fTravelsAsMSG() async throws {
        // The memory device advertises CBOR|WINK without NMSG, so MSG is allowed and echoed.
        let connection = try await Self.open(MemoryReportPipe())
        #expect(
            try await connection.transact(.u2f, payload: [0x00, 0x03, 0x00, 0x00], timeout: .seconds(1)).first
                == 0)
    }

    static let hostile: [(Hostility, TransportError.Code?)] = [
        (.silent, .timeout),
        (.keepaliveForever, .timeout),
        (.wrongChannel, .timeout),
        (.sequenceGap, .malformedResponse),
        (.sequenceRepeat, .malformedResponse),
        (.lengthOverMaximum, .malformedResponse),
        (.initializationMidMessage, .malformedResponse),
        (.truncatedReport, .malformedResponse),
        (.garbage, nil),
    ]

    @Test(arguments: hostile)
    func hostileDeviceEndsWithATypedError(_ hostility: Hostility, _ expected: TransportError.Code?)
        async throws
    {
        let pipe = MemoryReportPipe(hostility: hostility, hostileRequests: 1)
        let connection = try await Self.open(pipe)
        let statuses = Mutex<[KeepaliveStatus]>([])
        do {
            _ = try await connection.transact(
                .cbor, payload: Self.request, deadline: .after(.seconds(1)),
                keepalive: { status in statuses.withLock { $0.append(status) } })
            Issue.record("\(hostility): no error")
        } catch {
            if let expected { #expect(error.code == expected, "\(hostility)") }
        }
        if case .keepaliveForever = hostility {
            // How many arrive before the deadline depends on the machine's load; the first is
            // "processing", as the device sent it.
            #expect(statuses.withLock { $0.first } == .processing)
        }
        await Self.expectRecovery(connection, "\(hostility)")
    }

    @Test func keepaliveStatusesReachTheCaller() async throws {
        let pipe = MemoryReportPipe(hostility: .keepalivesThenReply, hostileRequests: 1)
        let connection = try await Self.open(pipe)
        let statuses = Mutex<[KeepaliveStatus]>([])
        let reply = try await connection.transact(
            .cbor, payload: Self.request, deadline: .after(.seconds(10)),
            keepalive: { status in statuses.withLock { $0.append(status) } })
        #expect(reply == [0x00])
        #expect(statuses.withLock { $0 } == [.processing, .userPresenceNeeded])
    }

    static let errorCodes: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x0A, 0x0B, 0x7F, 0x42]

    @Test(arguments: errorCodes)
    func deviceErrorsAreTyped(_ code: UInt8) async throws {
        let connection = try await Self.open(MemoryReportPipe(hostility: .error(code), hostileRequests: 1))
        do {
            _ = try await connection.transact(.cbor, payload: Self.request, timeout: .seconds(1))
            Issue.record("no error for 0x\(String(code, radix: 16))")
        } catch {
            #expect(error.code == .deviceError)
            #expect((error.underlying as? CTAPHIDError)?.deviceError == CTAPHIDErrorCode(rawValue: code))
        }
        await Self.expectRecovery(connection, "ERROR 0x\(String(code, radix: 16))")
    }

    @Test func channelBusyForeverEndsAsBusy() async throws {
        let pipe = MemoryReportPipe(hostility: .error(0x06), hostileRequests: .max)
        let connection = try await Self.open(pipe)
        do {
            _ = try await connection.transact(
                .cbor, payload: Self.request, deadline: .after(.milliseconds(300)), keepalive: { _ in })
            Issue.record("busy forever ended without error")
        } catch {
            #expect(error.code == .busy)
        }
        pipe.behave()
        await Self.expectRecovery(connection, "busy forever")
    }

    @Test func channelBusyIsRetried() async throws {
        let pipe = MemoryReportPipe(hostility: .error(0x06), hostileRequests: 3)
        let connection = try await Self.open(pipe)
        let reply = try await connection.transact(.cbor, payload: [7, 7], timeout: .seconds(10))
        #expect(reply == [0, 7, 7])
    }

    @Test func busyAnswerToInitEndsAsBusyThenOpens() async throws {
        let pipe = MemoryReportPipe(busyInits: .max)
        await #expect {
            _ = try await CTAPHIDConnection.open(
                pipe: pipe, descriptor: Self.descriptor, timeout: .milliseconds(300))
        } throws: { ($0 as? TransportError)?.code == .busy }
        let retrying = MemoryReportPipe(busyInits: 2)
        let connection = try await Self.open(retrying)
        await Self.expectRecovery(connection, "busy INIT")
    }

    @Test func silentDeviceFailsToOpen() async {
        let pipe = MemoryReportPipe(busyInits: 0)
        pipe.swallowInit()
        await #expect {
            _ = try await CTAPHIDConnection.open(
                pipe: pipe, descriptor: Self.descriptor, timeout: .milliseconds(200))
        } throws: { ($0 as? TransportError)?.code == .timeout }
    }

    @Test func cancellationSendsCancelAndRecovers() async throws {
        let pipe = MemoryReportPipe(hostility: .keepaliveForever, hostileRequests: 1)
        let connection = try await Self.open(pipe)
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        let task = Task {
            try await connection.transact(
                .cbor, payload: Self.request, deadline: .after(.seconds(30)),
                keepalive: { _ in startedContinuation.yield() })
        }
        for await _ in started { break }
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("cancelled transaction returned a value")
        } catch let error as TransportError {
            #expect(error.code == .cancelled)
        }
        #expect(pipe.cancels == 1)
        await Self.expectRecovery(connection, "cancellation")
    }

    @Test func closedConnectionRefusesWork() async throws {
        let connection = try await Self.open(MemoryReportPipe())
        await connection.close()
        await #expect {
            _ = try await connection.transact(.cbor, payload: Self.request, timeout: .seconds(1))
        } throws: { ($0 as? TransportError)?.code == .closed }
    }

    @Test func smallReportSizeFromTheDeviceIsUsed() async throws {
        let connection = try await CTAPHIDConnection.open(
            pipe: MemoryReportPipe(reportSize: 32), descriptor: Self.descriptor, timeout: .seconds(10))
        let payload = (0..<500).map { UInt8(truncatingIfNeeded: $0) }
        #expect(
            try await connection.transact(.cbor, payload: payload, timeout: .seconds(10)) == [0] + payload)
    }
}
