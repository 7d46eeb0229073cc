import Testing

@testable import CTAPHID

/// Framing checked against the layout of CTAP 2.1 §11.2.4, written out by hand.
@Suite struct CTAPHIDMessageTests {
    @Test(arguments: [(64, 7609), (48, 5545), (8, 385)])
    func maxPayloadFollowsTheSpecFormula(reportSize: Int, expected: Int) {
        // §11.2.4: (reportSize - 7) + 128 * (reportSize - 5); 7609 for 64-byte reports.
        #expect(CTAPHIDMessage.maxPayloadSize(reportSize: reportSize) == expected)
    }

    @Test func segmentsAcrossAContinuationPacket() throws {
        let payload = (0..<60).map { UInt8($0) }
        let message = CTAPHIDMessage(channel: 0x0102_0304, command: .cbor, payload: payload)
        let reports = try message.reports(reportSize: 64)
        let first = "01020304" + "90" + "003c" + Hex.encode(payload[0..<57])
        let second = "01020304" + "00" + "393a3b" + String(repeating: "00", count: 56)
        #expect(reports.map { Hex.encode($0) } == [first, second])
    }

    @Test func emptyMessageIsOneReport() throws {
        let reports = try CTAPHIDMessage(channel: 0xFFFF_FFFF, command: .wink, payload: []).reports(
            reportSize: 64)
        #expect(
            reports.map { Hex.encode($0) } == [
                "ffffffff" + "88" + "0000" + String(repeating: "00", count: 57)
            ])
    }

    @Test func largestMessageUsesAllSequenceNumbers() throws {
        let payload = (0..<7609).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let reports = try CTAPHIDMessage(channel: 9, command: .msg, payload: payload).reports(reportSize: 64)
        #expect(reports.count == 129)
        #expect(reports.allSatisfy { $0.count == 64 })
        #expect(reports.last?[4] == 127)
        var assembler = CTAPHIDMessageAssembler(channel: 9)
        var result: CTAPHIDMessage?
        for report in reports {
            if case .complete(let message) = try assembler.append(report) { result = message }
        }
        #expect(result?.payload == payload)
        #expect(result?.command == .msg)
    }

    @Test func oversizedMessageIsRefused() {
        let message = CTAPHIDMessage(channel: 1, command: .cbor, payload: Array(repeating: 0, count: 7610))
        #expect(throws: CTAPHIDError.self) { try message.reports(reportSize: 64) }
        #expect((try? message.reports(reportSize: 65)) != nil)
    }

    @Test func reportSizeIsNotHardCoded() throws {
        let payload = Array(repeating: UInt8(0xAB), count: 30)
        let reports = try CTAPHIDMessage(channel: 5, command: .ping, payload: payload).reports(reportSize: 16)
        // 9 bytes in the first packet, 11 in each continuation: 9 + 11 + 10.
        #expect(reports.count == 3)
        #expect(reports.allSatisfy { $0.count == 16 })
        #expect(Hex.encode(reports[0].prefix(7)) == "0000000581001e")
    }
}

/// The reassembler's strict checks, each fed reports laid out by hand.
@Suite struct CTAPHIDMessageAssemblerTests {
    static let channel: UInt32 = 0xCAFE_0001
    static let header = "cafe0001"

    static func report(_ hex: String, size: Int = 64) -> [UInt8] {
        var bytes = Hex.decode(hex)
        bytes.append(contentsOf: repeatElement(0, count: max(0, size - bytes.count)))
        return bytes
    }

    @Test func reassemblesAndIgnoresOtherChannels() throws {
        var assembler = CTAPHIDMessageAssembler(channel: Self.channel)
        let step1 = try assembler.append(Self.report("cafe0002" + "90" + "0001" + "00"))
        #expect(step1 == .ignored)
        let step2 = try assembler.append(
            Self.report(Self.header + "90" + "0040" + String(repeating: "11", count: 57)))
        #expect(step2 == .needMore)
        let step3 = try assembler.append(Self.report("cafe0002" + "00" + "22"))
        #expect(step3 == .ignored)
        let step = try assembler.append(Self.report(Self.header + "00" + String(repeating: "22", count: 7)))
        let expected = Array(repeating: UInt8(0x11), count: 57) + Array(repeating: UInt8(0x22), count: 7)
        #expect(step == .complete(CTAPHIDMessage(channel: Self.channel, command: .cbor, payload: expected)))
    }

    static let failures: [(name: String, reports: [String], code: CTAPHIDError.Code)] = [
        ("sequence gap", [header + "900080", header + "01"], .invalidSequence),
        ("sequence repeat", [header + "9000b0", header + "00", header + "00"], .invalidSequence),
        ("init mid-message", [header + "900080", header + "bb0001"], .unexpectedInitialization),
        ("length over maximum", [header + "901dba"], .messageTooLarge),
        ("continuation outside a message", [header + "00"], .malformedPacket),
    ]

    @Test(arguments: failures)
    func rejects(_ failure: (name: String, reports: [String], code: CTAPHIDError.Code)) {
        var assembler = CTAPHIDMessageAssembler(channel: Self.channel)
        var caught: CTAPHIDError?
        for hex in failure.reports {
            do { _ = try assembler.append(Self.report(hex)) } catch { caught = error }
        }
        #expect(caught?.code == failure.code, "\(failure.name)")
        #expect(!assembler.isAssembling)
    }

    @Test func maximumDeclaredLengthIsAccepted() throws {
        var assembler = CTAPHIDMessageAssembler(channel: Self.channel)
        let step4 = try assembler.append(Self.report(Self.header + "901db9"))
        #expect(step4 == .needMore)
    }

    @Test(arguments: [3, 6, 63, 65])
    func wrongReportLengthIsRejected(length: Int) {
        var assembler = CTAPHIDMessageAssembler(channel: Self.channel)
        let report = Array(Self.report(Self.header + "860001" + "00", size: 70).prefix(length))
        #expect(throws: CTAPHIDError.self) { try assembler.append(report) }
    }
}

@Suite struct CTAPHIDInitResponseTests {
    @Test func parsesTheSpecLayout() throws {
        // nonce, CID, protocol 2, version 5.4.3, capabilities WINK|CBOR|NMSG.
        let payload = Hex.decode("0102030405060708" + "11223344" + "02" + "050403" + "0d")
        let response = try CTAPHIDInitResponse(payload: payload)
        #expect(response.nonce == Hex.decode("0102030405060708"))
        #expect(response.channel == 0x1122_3344)
        #expect(response.protocolVersion == 2)
        #expect([response.majorVersion, response.minorVersion, response.buildVersion] == [5, 4, 3])
        #expect(response.capabilities == [.wink, .cbor, .noMSG])
        #expect(response.payload == payload)
    }

    @Test func shortPayloadIsRejected() {
        #expect(throws: CTAPHIDError.self) {
            try CTAPHIDInitResponse(payload: Array(repeating: 0, count: 16))
        }
    }
}
