import CTAPHID

extension FuzzTarget {
    /// The host side of CTAPHID: 64-byte reports from a key assembled into messages (on the
    /// channel of the first report), INIT responses and HID report descriptors parsed. A message
    /// that assembles splits back into reports that assemble to the same message.
    static let ctaphidHost = FuzzTarget(
        "ctaphid-host", "CTAPHID message assembly, INIT response, report descriptor"
    ) {
        bytes throws(FuzzPropertyViolation) in
        _ = try? HIDReportDescriptor(bytes: bytes)
        let size = CTAPHIDMessage.defaultReportSize
        let reports = stride(from: 0, to: bytes.count, by: size).map {
            Array(bytes[$0..<min($0 + size, bytes.count)])
        }
        guard let first = reports.first, let channel = CTAPHIDPacket.channel(of: first) else { return }
        var assembler = CTAPHIDMessageAssembler(channel: channel, reportSize: size)
        for report in reports {
            if let packet = try? CTAPHIDPacket(report: report) {
                try expect(
                    packet.channel == CTAPHIDPacket.channel(of: report), "a packet read on another channel")
            }
            guard case .complete(let message) = try? assembler.append(report) else { continue }
            try expect(message.channel == channel, "a message assembled on another channel")
            try expect(
                message.payload.count <= CTAPHIDMessage.maxPayloadSize(reportSize: size),
                "an assembled message exceeds the CTAPHID size limit")
            if message.command == .initialize, let info = try? CTAPHIDInitResponse(payload: message.payload) {
                try expect(
                    (try? CTAPHIDInitResponse(payload: info.payload)) == info,
                    "an INIT response does not round trip")
            }
            guard let again = try? message.reports(reportSize: size) else {
                throw FuzzPropertyViolation(description: "an assembled message cannot be split into reports")
            }
            var reassembler = CTAPHIDMessageAssembler(channel: channel, reportSize: size)
            var result: CTAPHIDMessage?
            for report in again {
                if case .complete(let m) = try? reassembler.append(report) { result = m }
            }
            try expect(result == message, "a message does not survive reports(reportSize:) and assembly")
        }

        // A key's report descriptor states its report size, so the size is hostile too: a second
        // pass assembles the same bytes in reports of a size the input's first byte picks (1–16
        // bytes, below the CTAPHID headers included). A refused report drops any partial message.
        let small = Int(bytes[0]) % 16 + 1
        var tiny = CTAPHIDMessageAssembler(channel: channel, reportSize: small)
        for start in stride(from: 0, to: bytes.count, by: small) {
            let report = Array(bytes[start..<min(start + small, bytes.count)])
            let step = Result { () throws(CTAPHIDError) -> CTAPHIDMessageAssembler.Step in try tiny.append(report) }
            switch step {
            case .success(.complete): try expect(!tiny.isAssembling, "a completed message left a partial one")
            case .failure: try expect(!tiny.isAssembling, "a refused report left its partial message")
            default: break
            }
        }
        tiny.reset()
        try expect(!tiny.isAssembling, "reset left a partial message")
    }

    /// The device side of CTAPHID (the virtual key's state machine): any report sequence, with
    /// time moving on by the input's own bytes, yields replies that fit the wire and at most one
    /// message in process at a time.
    static let ctaphidDevice = FuzzTarget("ctaphid-device", "CTAPHID device state machine (virtual key side)")
    {
        bytes throws(FuzzPropertyViolation) in
        let size = CTAPHIDMessage.defaultReportSize
        // The first time byte's top bits also pick the INIT capabilities: bit 7 clears wink,
        // bit 6 clears CBOR (a U2F-only key), bit 5 sets NMSG (a CTAP2-only key).
        let flags = bytes.first ?? 0
        var capabilities: CTAPHIDCapabilities = [.wink, .cbor]
        if flags & 0x80 != 0 { capabilities.remove(.wink) }
        if flags & 0x40 != 0 { capabilities.remove(.cbor) }
        if flags & 0x20 != 0 { capabilities.insert(.noMSG) }
        let info = CTAPHIDInitResponse(
            nonce: [], channel: 0, protocolVersion: 2, majorVersion: 1, minorVersion: 0, buildVersion: 0,
            capabilities: capabilities)
        var device = CTAPHIDDeviceState(
            reportSize: size, deviceInfo: info, messageTimeout: .milliseconds(500))
        var now = ContinuousClock.now
        var pending: [UInt64] = []
        // Each step: one byte of elapsed time (10 ms units), then a report.
        var offset = 0
        while offset < bytes.count {
            now = now.advanced(by: .milliseconds(10 * Int(bytes[offset])))
            offset += 1
            let report = Array(bytes[offset..<min(offset + size, bytes.count)])
            offset += size
            var actions = device.receive(report, at: now)
            actions += device.expire(at: now)
            for action in actions {
                switch action {
                case .send(let message):
                    try expect(
                        (try? message.reports(reportSize: size)) != nil, "a reply does not fit CTAPHID")
                case .process(let message, let transaction):
                    try expect(
                        device.processingChannel == message.channel, "a message in process on another channel"
                    )
                    pending.append(transaction)
                case .cancel:
                    break
                }
            }
            if let channel = device.assemblingChannel {
                try expect(
                    channel != CTAPHIDMessage.broadcastChannel,
                    "a message assembling on the broadcast channel")
            }
            // The host's work finishes at once, oldest first, every other step.
            if offset % 2 == 0, !pending.isEmpty { _ = device.finish(transaction: pending.removeFirst()) }
        }
    }
}
