import Testing

@testable import CTAPHID

/// Hostile bytes thrown at every CTAPHID parser: each must answer with a value or a typed error,
/// never trap. A fixed-seed generator keeps failures reproducible.
@Suite struct CTAPHIDRobustnessTests {
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func randomReport(_ random: inout SplitMix, channels: [UInt32]) -> [UInt8] {
        let length = Bool.random(using: &random) ? 64 : Int.random(in: 0...80, using: &random)
        var report = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
        if report.count >= 4, let channel = channels.randomElement(using: &random),
            Bool.random(using: &random)
        {
            report.replaceSubrange(
                0..<4,
                with: [
                    UInt8(channel >> 24), UInt8(channel >> 16 & 0xFF), UInt8(channel >> 8 & 0xFF),
                    UInt8(channel & 0xFF),
                ])
        }
        return report
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func assemblerSurvivesRandomReports(seed: UInt64) {
        var random = SplitMix(state: seed)
        var assembler = CTAPHIDMessageAssembler(channel: 0x0000_0001)
        var completed = 0
        for _ in 0..<1500 {
            let report = Self.randomReport(&random, channels: [1, 2])
            do {
                if case .complete(let message) = try assembler.append(report) {
                    completed += 1
                    #expect(message.payload.count <= CTAPHIDMessage.maxPayloadSize(reportSize: 64))
                }
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
    }

    @Test(arguments: [5, 6, 7] as [UInt64])
    func deviceStateSurvivesRandomReports(seed: UInt64) {
        var random = SplitMix(state: seed)
        var state = CTAPHIDDeviceState(
            deviceInfo: CTAPHIDInitResponse(
                nonce: [], channel: 0, majorVersion: 0, minorVersion: 0, buildVersion: 0,
                capabilities: [.cbor]))
        var now = ContinuousClock.now
        for _ in 0..<1500 {
            now += .milliseconds(Int.random(in: 0...300, using: &random))
            for action in state.receive(
                Self.randomReport(&random, channels: [0xFFFF_FFFF, 1, 2, 3]), at: now)
            {
                switch action {
                case .send(let message):
                    // Every reply must be sendable in 64-byte reports.
                    #expect((try? message.reports(reportSize: 64)) != nil)
                case .process(_, let transaction):
                    if Bool.random(using: &random) { _ = state.finish(transaction: transaction) }
                case .cancel:
                    break
                }
            }
            _ = state.expire(at: now)
        }
    }

    @Test func reportDescriptorParserSurvivesRandomBytes() {
        var random = SplitMix(state: 42)
        for _ in 0..<1500 {
            let bytes = (0..<Int.random(in: 0...96, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            if let parsed = try? HIDReportDescriptor(bytes: bytes) {
                #expect(parsed.maxInputReportSize > 0 && parsed.maxOutputReportSize > 0)
            }
        }
    }

    @Test(arguments: [8, 16, 64, 100])
    func segmentationRoundTripsAtAnySize(reportSize: Int) throws {
        var random = SplitMix(state: UInt64(reportSize))
        for length in [
            0, 1, reportSize - 7, reportSize - 6, CTAPHIDMessage.maxPayloadSize(reportSize: reportSize),
        ] {
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let reports = try CTAPHIDMessage(channel: 7, command: .cbor, payload: payload).reports(
                reportSize: reportSize)
            var assembler = CTAPHIDMessageAssembler(channel: 7, reportSize: reportSize)
            var result: [UInt8]?
            for report in reports {
                if case .complete(let message) = try assembler.append(report) { result = message.payload }
            }
            #expect(result == payload, "\(length) bytes in \(reportSize)-byte reports")
        }
    }
}
