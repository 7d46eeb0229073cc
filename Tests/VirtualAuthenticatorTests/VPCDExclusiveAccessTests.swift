import Foundation
import NFCTransport
import Testing
import Transport
import VirtualAuthenticator

/// Exclusive access on a PC/SC card, seen from a second handle on the same card (another
/// application, as far as pcscd is concerned): nested holds, a wait that ends at its deadline,
/// and a wait that ends at once on cancellation yet leaves its connection usable.
extension VPCDEndToEndTests {
    /// One getInfo-shaped CTAP2 message through `connection` (the echo card answers it).
    static func ping(_ connection: PCSCConnection, deadline: Deadline) async throws(TransportError) -> [UInt8] {
        try await connection.transact(.cbor, payload: [0x04], deadline: deadline, keepalive: { _ in })
    }

    @Test func exclusiveAccessNestsAndKeepsAnotherHandleOutUntilTheOutermostEnds() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        try await withCard(EchoHandler(), bed: bed) { _ in
            let holder = try await openWhenPresent(bed.readers[0])
            let other = try await openWhenPresent(bed.readers[0])
            try await holder.beginExclusiveAccess(deadline: .after(.seconds(5)))
            try await holder.beginExclusiveAccess(deadline: .after(.seconds(5)))
            // Exchanges inside the hold run without a transaction of their own.
            #expect(try await Self.ping(holder, deadline: .after(.seconds(5))) == [0x00, 0x04])
            await holder.endExclusiveAccess()
            // Still held by the outer hold: the other handle waits, and gives up at its deadline.
            let started = ContinuousClock.now
            await #expect(throws: TransportError(.busy, "")) {
                try await Self.ping(other, deadline: .after(.milliseconds(600)))
            }
            #expect(ContinuousClock.now - started < .seconds(2))
            await holder.endExclusiveAccess()
            // Let go: the other handle's given-up wait has let the card go too, and it works.
            #expect(try await Self.ping(other, deadline: .after(.seconds(5))) == [0x00, 0x04])
            #expect(try await Self.ping(holder, deadline: .after(.seconds(5))) == [0x00, 0x04])
            await other.close()
            await holder.close()
        }
    }

    @Test func cancellingAWaitForAHeldCardEndsItAtOnceAndTheConnectionStaysUsable() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        try await withCard(EchoHandler(), bed: bed) { _ in
            let holder = try await openWhenPresent(bed.readers[0])
            let other = try await openWhenPresent(bed.readers[0])
            try await holder.beginExclusiveAccess(deadline: .after(.seconds(5)))
            let waiting = Task { () async -> Result<[UInt8], TransportError> in
                do throws(TransportError) {
                    return .success(try await Self.ping(other, deadline: .after(.seconds(30))))
                } catch {
                    return .failure(error)
                }
            }
            try await Task.sleep(for: .milliseconds(500))
            let cancelled = ContinuousClock.now
            waiting.cancel()
            let result = await waiting.value
            // pcsc-lite would wait in SCardBeginTransaction until the holder lets go (30 s here).
            #expect(ContinuousClock.now - cancelled < .milliseconds(500))
            #expect(throws: TransportError(.cancelled, "")) { try result.get() }
            await holder.endExclusiveAccess()
            // The abandoned wait gets the card, sees nobody wants it, and lets it go: the same
            // connection works, and so does the holder's.
            #expect(try await Self.ping(other, deadline: .after(.seconds(5))) == [0x00, 0x04])
            #expect(try await Self.ping(holder, deadline: .after(.seconds(5))) == [0x00, 0x04])
            await other.close()
            await holder.close()
        }
    }
}
