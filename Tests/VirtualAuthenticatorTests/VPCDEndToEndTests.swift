import Foundation
import NFCTransport
import TestProcesses
import Testing
import Transport
import VirtualAuthenticator

/// Our PC/SC host transport against our vpcd card server through a real pcscd + vpcd.
/// Serialized: the cards share the bed's two readers.
@Suite(.serialized) struct VPCDEndToEndTests {
    @Test func selectAndMessageRoundTrip() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        let handler = EchoHandler()
        try await withCard(handler, bed: bed) { _ in
            let connection = try await openWhenPresent(bed.readers[0])
            #expect(connection.selectResponse == Array("U2F_V2".utf8))
            #expect(connection.descriptor.uri == "pcsc:\(bed.readers[0])")
            #expect(connection.descriptor.transport == .nfc)
            // authenticatorGetInfo (0x04) comes back behind status 00.
            #expect(try await connection.transact(.cbor, payload: [0x04]) == [0x00, 0x04])
            let message: [UInt8] = [0x01] + (0..<200).map { UInt8($0) }
            #expect(try await connection.transact(.cbor, payload: message) == [0x00] + message)
            await connection.close()
            await #expect(throws: TransportError.self) {
                try await connection.transact(.cbor, payload: [0x04])
            }
        }
        #expect(handler.powerCycles.count >= 1)
    }

    @Test func u2fAPDUsTravelAsIs() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        try await withCard(EchoHandler(), bed: bed) { _ in
            let connection = try await openWhenPresent(bed.readers[0])
            // U2F_VERSION (FIDO U2F raw message formats §6): "U2F_V2" then 9000.
            let reply = try await connection.transact(.u2f, payload: [0x00, 0x03, 0x00, 0x00])
            #expect(reply == Array("U2F_V2".utf8) + [0x90, 0x00])
            await #expect(throws: TransportError.self) {
                try await connection.transact(.u2f, payload: [0x00, 0x03])
            }
            await connection.close()
        }
    }

    @Test func delayedReplyIsPolledWithKeepalives() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        try await withCard(DelayHandler(delay: .milliseconds(500)), bed: bed) { _ in
            let connection = try await openWhenPresent(bed.readers[0])
            let seen = Recorder<KeepaliveStatus>()
            let reply = try await connection.transact(
                .cbor, payload: [0x01, 0xA0], deadline: .after(.seconds(10)), keepalive: { seen.append($0) })
            #expect(reply == [0x00, 0x01, 0xA0])
            #expect(seen.all.contains(.userPresenceNeeded))
            #expect(seen.all.count >= 2)
            await connection.close()
        }
    }

    @Test(arguments: [PCSCConnection.APDUMode.automatic, .short, .extended])
    func largeMessagesBothWays(mode: PCSCConnection.APDUMode) async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        try await withCard(EchoHandler(), bed: bed) { _ in
            let connection = try await openWhenPresent(bed.readers[0], options: .init(apduMode: mode))
            let message: [UInt8] = [0x01] + (0..<1200).map { UInt8(($0 * 13) & 0xFF) }
            #expect(try await connection.transact(.cbor, payload: message) == [0x00] + message)
            await connection.close()
        }
    }

    @Test func shortAPDUCardForcesChainingBothWays() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        try await withCard(EchoHandler(), bed: bed, shortAPDUsOnly: true) { _ in
            // Automatic mode tries an extended APDU, meets 6700 and chains from then on.
            let connection = try await openWhenPresent(bed.readers[0])
            let message: [UInt8] = [0x02] + (0..<700).map { UInt8($0 & 0xFF) }
            #expect(try await connection.transact(.cbor, payload: message) == [0x00] + message)
            #expect(try await connection.transact(.cbor, payload: message) == [0x00] + message)
            await connection.close()
            // Forcing extended APDUs on such a card surfaces the card's refusal.
            let forced = try await openWhenPresent(bed.readers[0], options: .init(apduMode: .extended))
            await #expect(throws: TransportError.self) { try await forced.transact(.cbor, payload: message) }
            await forced.close()
        }
    }

    @Test func repliesOver256BytesUseGetResponse() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        try await withCard(BigReplyHandler(count: 1000), bed: bed) { _ in
            let connection = try await openWhenPresent(bed.readers[0], options: .init(apduMode: .short))
            #expect(
                try await connection.transact(.cbor, payload: [0x04]) == [0x00]
                    + BigReplyHandler.pattern(1000))
            let u2f = try await connection.transact(.u2f, payload: [0x00, 0x02, 0x03, 0x00, 0x01, 0xAA])
            #expect(u2f == BigReplyHandler.pattern(1000) + [0x90, 0x00])
            await connection.close()
        }
    }

    @Test func cancellationReachesTheCard() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        let handler = DelayHandler(delay: .seconds(20))
        try await withCard(handler, bed: bed) { _ in
            let connection = try await openWhenPresent(bed.readers[0])
            let seen = Recorder<KeepaliveStatus>()
            let task = Task {
                try await connection.transact(
                    .cbor, payload: [0x01], deadline: .after(.seconds(30)), keepalive: { seen.append($0) })
            }
            while seen.all.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
            task.cancel()
            do {
                _ = try await task.value
                Issue.record("a cancelled transaction returned a reply")
            } catch let error as TransportError {
                #expect(error.code == .cancelled)
            }
            #expect(handler.cancelled.count == 1)
            await connection.close()
        }
    }

    @Test func deadlineCancelsAndTimesOut() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        let handler = DelayHandler(delay: .seconds(20))
        try await withCard(handler, bed: bed) { _ in
            let connection = try await openWhenPresent(bed.readers[0])
            await #expect {
                _ = try await connection.transact(
                    .cbor, payload: [0x01], deadline: .after(.milliseconds(400)), keepalive: { _ in })
            } throws: { ($0 as? TransportError)?.code == .timeout }
            #expect(handler.cancelled.count == 1)
            await connection.close()
        }
    }

    @Test func cardRemovedMidOperation() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        let handler = DelayHandler(delay: .seconds(20))
        let server = VPCDCardServer(handler: handler, configuration: bed.configuration(slot: 0))
        let serverTask = Task { await server.run() }
        let connection = try await openWhenPresent(bed.readers[0])
        let seen = Recorder<KeepaliveStatus>()
        let transaction = Task {
            try await connection.transact(
                .cbor, payload: [0x01], deadline: .after(.seconds(15)), keepalive: { seen.append($0) })
        }
        while seen.all.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        serverTask.cancel()  // the card leaves the field
        await serverTask.value
        do {
            _ = try await transaction.value
            Issue.record("a transaction on a removed card returned a reply")
        } catch let error as TransportError {
            // Normally "card removed" (noDevice); if pcscd's presence poll is slower than the
            // transport's one-second look, "the reader could not exchange data". Never a hang,
            // a timeout or a malformed response.
            #expect(error.code == .noDevice || error.code == .deviceError, "\(error)")
            #expect(error.code != .timeout)
        }
        await connection.close()
    }

    @Test func noSuchReader() async throws {
        guard VPCDTestBed.fromEnvironment() != nil else { return }
        let discovery = PCSCDiscovery()
        await #expect { _ = try await discovery.open(uri: "pcsc:No Such Reader 99") } throws: {
            ($0 as? TransportError)?.code == .noDevice
        }
        await #expect { _ = try await discovery.open(uri: "pcsc:99") } throws: {
            ($0 as? TransportError)?.code == .noDevice
        }
    }

    @Test func twoCardsOnTwoReaders() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        let devices = try await PCSCDiscovery().devices()
        #expect(devices.map(\.uri) == bed.readers.map { "pcsc:\($0)" })
        try await withCard(EchoHandler(), bed: bed, slot: 0) { _ in
            try await withCard(BigReplyHandler(count: 300), bed: bed, slot: 1) { _ in
                let first = try await openWhenPresent(bed.readers[0])
                _ = try await openWhenPresent(bed.readers[1]).close()
                let second = try await PCSCDiscovery().connect(uri: "pcsc:1")
                #expect(try await first.transact(.cbor, payload: [0x04]) == [0x00, 0x04])
                #expect(
                    try await second.transact(.cbor, payload: [0x04]) == [0x00] + BigReplyHandler.pattern(300)
                )
                await first.close()
                await second.close()
            }
        }
    }

    @Test func monitorSeesCardsComeAndGo() async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        let events = Recorder<PCSCReaderEvent>()
        let reader = bed.readers[1]
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await PCSCReaderMonitor(slice: .milliseconds(300)).run { events.append($0) } }
            try await waitForEvent(.readerAdded, reader: reader, in: events, after: 0)
            let mark = events.all.count
            try await withCard(EchoHandler(), bed: bed, slot: 1) { _ in
                try await waitForEvent(.cardInserted, reader: reader, in: events, after: mark)
            }
            try await waitForEvent(.cardRemoved, reader: reader, in: events, after: mark)
            group.cancelAll()
        }
    }
}

/// python-fido2 (`fido2.pcsc.CtapPcscDevice`) talking to our card server (in the serialized
/// suite, since it uses the bed's second reader too): an independent view of
/// SELECT, NFCCTAP_MSG in both its chained and extended modes, 61xx, and U2F APDUs.
extension VPCDEndToEndTests {
    @Test func pythonFIDO2TalksToTheCard() async throws {
        guard let bed = VPCDTestBed.fromEnvironment(), let python = pythonForCrossCheck() else { return }
        let big = [UInt8(0x01)] + (0..<600).map { UInt8(($0 * 5) & 0xFF) }
        let hexBig = big.map { String(format: "%02x", $0) }.joined()
        let result = try await withCard(EchoHandler(), bed: bed, slot: 1) { _ in
            try await runProcess(
                python,
                [
                    pythonScriptsDirectory.appendingPathComponent("pcsc_apdu_probe.py").path,
                    "--reader", bed.readers[1], "--cbor", "04", "--cbor", hexBig,
                    "--u2f", "00030000", "--u2f", "00020300 03aabbcc".replacingOccurrences(of: " ", with: ""),
                ])
        }
        #expect(result.status == 0, "\(result.output)")
        let json = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        // CAPABILITY.CBOR (the getInfo probe answered) | CAPABILITY.NMSG (python-fido2 sets it on U2F_V2).
        #expect(json?["capabilities"] as? Int == 0x04 | 0x08)
        #expect(json?["atr"] as? String == "3b80800101")
        let chained = json?["chained"] as? [String: [String]]
        let extended = json?["extended"] as? [String: [String]]
        let expectedCBOR = ["0004", "00" + hexBig]
        #expect(chained?["cbor"] == expectedCBOR)
        #expect(extended?["cbor"] == expectedCBOR)
        // U2F_VERSION answers "U2F_V2" 9000; the echo shows the APDU as python-fido2 framed it:
        // short with Le 00 when chaining, extended without Le otherwise.
        let version = "5532465f5632" + "9000"
        #expect(chained?["u2f"] == [version, "0002030003aabbcc00" + "9000"])
        #expect(extended?["u2f"] == [version, "00020300000003aabbcc" + "9000"])
    }
}

extension VPCDEndToEndTests {
    /// Another client holding the card exclusively (pyscard, SCARD_SHARE_EXCLUSIVE) makes our
    /// shared connect fail with a sharing violation, reported as "busy".
    @Test func exclusiveHolderMeansBusy() async throws {
        guard let bed = VPCDTestBed.fromEnvironment(), let python = pythonForCrossCheck() else { return }
        try await withCard(EchoHandler(), bed: bed) { _ in
            // Wait until pcscd has the card.
            try await openWhenPresent(bed.readers[0]).close()
            let holder = Process()
            holder.executableURL = URL(fileURLWithPath: python)
            holder.arguments = [
                pythonScriptsDirectory.appendingPathComponent("pcsc_hold_exclusive.py").path, bed.readers[0],
            ]
            let input = Pipe()
            let output = Pipe()
            holder.standardInput = input
            holder.standardOutput = output
            try holder.run()
            let reader = output.fileHandleForReading
            let line = try await TestProcess.onThread { () -> String in
                var bytes: [UInt8] = []
                while let byte = try reader.read(upToCount: 1)?.first, byte != 0x0A { bytes.append(byte) }
                return String(decoding: bytes, as: UTF8.self)
            }
            #expect(line == "held")
            await #expect {
                _ = try await PCSCDiscovery().open(uri: "pcsc:\(bed.readers[0])")
            } throws: {
                ($0 as? TransportError)?.code == .busy
            }
            try input.fileHandleForWriting.close()
            _ = try await TestProcess.onThread { holder.waitUntilExit() }
        }
    }
}
