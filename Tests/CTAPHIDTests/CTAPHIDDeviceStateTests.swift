import Testing

@testable import CTAPHID

/// The device-side state machine, driven with reports laid out by hand per CTAP 2.1 §11.2.
@Suite struct CTAPHIDDeviceStateTests {
    static let info = CTAPHIDInitResponse(
        nonce: [], channel: 0, majorVersion: 1, minorVersion: 2, buildVersion: 3,
        capabilities: [.wink, .cbor])

    static func report(_ hex: String) -> [UInt8] {
        var bytes = Hex.decode(hex)
        bytes.append(contentsOf: repeatElement(0, count: 64 - bytes.count))
        return bytes
    }

    var state = CTAPHIDDeviceState(deviceInfo: info)
    let start = ContinuousClock.now

    /// Sends INIT on the broadcast channel and returns the allocated channel.
    mutating func allocate(nonce: String = "0011223344556677") throws -> UInt32 {
        let actions = state.receive(Self.report("ffffffff" + "86" + "0008" + nonce), at: start)
        guard case .send(let message)? = actions.first, actions.count == 1 else {
            Issue.record("INIT was not answered: \(actions)")
            return 0
        }
        #expect(message.channel == 0xFFFF_FFFF)
        #expect(message.command == .initialize)
        let response = try CTAPHIDInitResponse(payload: message.payload)
        #expect(Hex.encode(response.nonce) == nonce)
        #expect(response.protocolVersion == 2)
        #expect(response.capabilities == [.wink, .cbor])
        return response.channel
    }

    static func errorByte(_ actions: [CTAPHIDDeviceState.Action]) -> UInt8? {
        guard case .send(let message)? = actions.last, message.command == .error else { return nil }
        return message.payload.first
    }

    @Test mutating func allocatesDistinctChannels() throws {
        let first = try allocate()
        let second = try allocate(nonce: "8899aabbccddeeff")
        #expect(first != second)
        #expect(first != 0 && first != 0xFFFF_FFFF)
    }

    @Test mutating func answersPingItself() throws {
        let channel = try allocate()
        let hexChannel = String(format: "%08x", channel)
        let actions = state.receive(Self.report(hexChannel + "81" + "0003" + "414243"), at: start)
        #expect(
            actions == [.send(CTAPHIDMessage(channel: channel, command: .ping, payload: [0x41, 0x42, 0x43]))])
    }

    @Test mutating func busyOnASecondChannelWhileProcessing() throws {
        let a = try allocate()
        let b = try allocate(nonce: "0101010101010101")
        let actions = state.receive(Self.report(String(format: "%08x", a) + "90" + "0001" + "04"), at: start)
        guard case .process(let message, let transaction)? = actions.first else {
            Issue.record("CBOR was not dispatched: \(actions)")
            return
        }
        #expect(message.payload == [0x04])
        let busy = state.receive(Self.report(String(format: "%08x", b) + "90" + "0001" + "04"), at: start)
        #expect(Self.errorByte(busy) == 0x06)
        let cancel = state.receive(Self.report(String(format: "%08x", a) + "91" + "0000"), at: start)
        #expect(cancel == [.cancel(channel: a)])
        let r5 = state.finish(transaction: transaction)
        #expect(r5)
        let after = state.receive(Self.report(String(format: "%08x", b) + "90" + "0001" + "04"), at: start)
        guard case .process? = after.first else {
            Issue.record("second channel not served after the first finished: \(after)")
            return
        }
    }

    @Test mutating func busyWhileAnotherChannelIsMidMessage() throws {
        let a = try allocate()
        let b = try allocate(nonce: "0101010101010101")
        let r6 = state.receive(Self.report(String(format: "%08x", a) + "90" + "0050"), at: start)
        #expect(r6.isEmpty)
        let busy = state.receive(Self.report(String(format: "%08x", b) + "81" + "0000"), at: start)
        #expect(Self.errorByte(busy) == 0x06)
    }

    @Test mutating func stalledMessageTimesOut() throws {
        let a = try allocate()
        let r7 = state.receive(Self.report(String(format: "%08x", a) + "90" + "0050"), at: start)
        #expect(r7.isEmpty)
        let r8 = state.expire(at: start + .milliseconds(100))
        #expect(r8.isEmpty)
        let r9 = state.expire(at: start + .seconds(1))
        #expect(Self.errorByte(r9) == 0x05)
    }

    @Test mutating func sequenceErrorsAreReported() throws {
        let a = String(format: "%08x", try allocate())
        let r10 = state.receive(Self.report(a + "90" + "0080"), at: start)
        #expect(r10.isEmpty)
        let r11 = state.receive(Self.report(a + "01"), at: start)
        #expect(Self.errorByte(r11) == 0x04)
    }

    @Test mutating func unknownChannelAndCommandAreRejected() throws {
        let r12 = state.receive(Self.report("00000063" + "90" + "0001" + "04"), at: start)
        #expect(Self.errorByte(r12) == 0x0B)
        let r13 = state.receive(Self.report("ffffffff" + "90" + "0001" + "04"), at: start)
        #expect(Self.errorByte(r13) == 0x0B)
        let a = String(format: "%08x", try allocate())
        let r14 = state.receive(Self.report(a + "c0" + "0000"), at: start)
        #expect(Self.errorByte(r14) == 0x01)
        let r15 = state.receive(Self.report(a + "90" + "1dba"), at: start)
        #expect(Self.errorByte(r15) == 0x03)
        let r16 = state.receive(Self.report("ffffffff" + "86" + "0007" + "00"), at: start)
        #expect(Self.errorByte(r16) == 0x03)
    }

    @Test mutating func resyncAbortsTheTransaction() throws {
        let channel = try allocate()
        let a = String(format: "%08x", channel)
        guard
            case .process(_, let transaction)? = state.receive(
                Self.report(a + "90" + "0001" + "04"), at: start
            ).first
        else {
            Issue.record("CBOR was not dispatched")
            return
        }
        let actions = state.receive(Self.report(a + "86" + "0008" + "0102030405060708"), at: start)
        #expect(actions.first == .cancel(channel: channel))
        let r17 = state.finish(transaction: transaction)
        #expect(!r17)
    }

    @Test mutating func lockHoldsOtherChannelsOff() throws {
        let a = String(format: "%08x", try allocate())
        let b = String(format: "%08x", try allocate(nonce: "0101010101010101"))
        guard case .send(let reply)? = state.receive(Self.report(a + "84" + "0001" + "02"), at: start).first
        else {
            Issue.record("LOCK not answered")
            return
        }
        #expect(reply.command == .lock)
        let r18 = state.receive(Self.report(b + "81" + "0000"), at: start)
        #expect(Self.errorByte(r18) == 0x06)
        let later = state.receive(Self.report(b + "81" + "0000"), at: start + .seconds(3))
        #expect(later.first.map { if case .send(let m) = $0 { m.command == .ping } else { false } } == true)
    }
}
