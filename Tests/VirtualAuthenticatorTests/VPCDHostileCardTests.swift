import Foundation
import NFCTransport
import Testing
import Transport
import VirtualAuthenticator

extension VPCDEndToEndTests {
    /// Our PC/SC transport against a card that misbehaves (``HostileCard``) through a real pcscd
    /// and vpcd: every case ends in a typed error within half a second of the deadline (the
    /// cancel, the removal check and a stuck `SCardTransmit` are all bounded by it), and a good
    /// card on the same reader works right after.
    @Suite(.serialized) struct HostileCardTests {
        /// The deadline each hostile exchange gets.
        static let deadline = Duration.seconds(2)
        /// What may pass beyond it: the requirement is 0.5 s (PCSCConnection's abandonGrace is
        /// 0.25 s); twice that leaves room for a loaded machine. A behaviour bound, not a benchmark.
        static let margin = Duration.seconds(1)

        /// The codes each behaviour may end in.
        static func expectedCodes(_ behaviour: HostileCard.Behaviour) -> Set<TransportError.Code> {
            switch behaviour {
            case .endlessStillProcessing, .selectOnly: return [.timeout]
            case .endlessMoreDataEmpty, .endlessResponseChaining, .endlessWrongLe, .truncatedResponse,
                .overlongResponse:
                return [.malformedResponse, .timeout]
            case .endlessCommandChaining, .garbageStatusWord, .wrongStatusWord: return [.deviceError]
            case .removedMidExchange: return [.noDevice, .deviceError]
            }
        }

        @Test(arguments: HostileCard.Behaviour.allCases)
        func endsInATypedErrorByTheDeadlineAndAGoodCardWorksAfter(_ behaviour: HostileCard.Behaviour)
            async throws
        {
            guard let bed = VPCDTestBed.fromEnvironment() else { return }
            let card = HostileCard(behaviour, port: bed.port)
            let options = PCSCConnection.Options(apduMode: behaviour == .endlessCommandChaining ? .short : .automatic)
            let connection: PCSCConnection
            do {
                connection = try await openWhenPresent(bed.readers[0], options: options)
            } catch {
                card.stopServing()
                throw error
            }
            // Long enough to be chained in short APDUs (when the case asks for them).
            let payload: [UInt8] = [0x04] + [UInt8](repeating: 0, count: behaviour == .endlessCommandChaining ? 600 : 0)
            let start = ContinuousClock.now
            var failure: TransportError?
            do throws(TransportError) {
                let reply = try await connection.transact(
                    .cbor, payload: payload, deadline: .after(Self.deadline), keepalive: { _ in })
                Issue.record("\(behaviour): the card's answer was accepted: \(reply.count) bytes")
            } catch {
                failure = error
            }
            let elapsed = ContinuousClock.now - start
            #expect(
                elapsed < Self.deadline + Self.margin,
                "\(behaviour): ended after \(elapsed), deadline \(Self.deadline)")
            if let failure {
                #expect(
                    Self.expectedCodes(behaviour).contains(failure.code),
                    "\(behaviour): \(failure.code): \(failure.message)")
            }
            #expect(card.apdusAfterSelect >= 1)
            if behaviour == .selectOnly {
                // Our SCardTransmit still waits for the card: the connection and every new one
                // on that reader are refused at once, with a typed error, not after a deadline.
                let refusedAt = ContinuousClock.now
                var refusals: [TransportError] = []
                switch await attemptOpen(bed.readers[0], options: options) {
                case .success(let extra):
                    Issue.record("a reader whose card is stuck was opened again")
                    await extra.close()
                case .failure(let error):
                    refusals.append(error)
                }
                do {
                    _ = try await connection.transact(
                        .cbor, payload: [0x04], deadline: .after(Self.deadline), keepalive: { _ in })
                    Issue.record("a connection whose transmit is stuck was used again")
                } catch {
                    refusals.append(error)
                }
                #expect(ContinuousClock.now - refusedAt < .milliseconds(500))
                for error in refusals {
                    #expect(error.code == .deviceError, "\(error.code): \(error.message)")
                    #expect(error.message.contains("stopped answering"), "\(error.message)")
                }
            }
            await connection.close()
            card.stopServing()

            // The next transaction, on a good card in the same reader, works.
            let key = try VirtualKey()
            try await withCard(key, bed: bed) { _ in
                let good = try await openWhenPresent(bed.readers[0])
                let info = try await good.transact(
                    .cbor, payload: [0x04], deadline: .after(.seconds(10)), keepalive: { _ in })
                #expect(info.first == 0x00)
                #expect(info.count > 20)
                await good.close()
            }
        }
    }
}
