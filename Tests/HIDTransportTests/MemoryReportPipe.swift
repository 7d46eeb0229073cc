import CTAPHID
import HIDTransport
import Synchronization
import Transport

/// What a scripted device does wrong when it receives a CTAPHID_CBOR request.
enum Hostility: Sendable, CustomStringConvertible {
    case silent
    case keepaliveForever
    case keepalivesThenReply
    case wrongChannel
    case sequenceGap
    case sequenceRepeat
    case lengthOverMaximum
    case initializationMidMessage
    case truncatedReport
    case error(UInt8)
    case garbage

    var description: String {
        switch self {
        case .silent: "never answers"
        case .keepaliveForever: "keepalive forever"
        case .keepalivesThenReply: "keepalives, then the reply"
        case .wrongChannel: "wrong channel"
        case .sequenceGap: "sequence gap"
        case .sequenceRepeat: "sequence repeat"
        case .lengthOverMaximum: "declared length over the maximum"
        case .initializationMidMessage: "init packet mid-message"
        case .truncatedReport: "truncated report"
        case .error(let code): "ERROR 0x\(String(code, radix: 16))"
        case .garbage: "garbage"
        }
    }
}

/// An in-memory device: a correct CTAPHID device (echoing CBOR as status 0 + request) that
/// misbehaves for the first `hostileRequests` CBOR requests, and answers the first `busyInits`
/// INIT requests with ERR_CHANNEL_BUSY.
final class MemoryReportPipe: CTAPHIDReportPipe {
    struct Core {
        var device: CTAPHIDDeviceState
        static func device(reportSize: Int) -> CTAPHIDDeviceState {
            CTAPHIDDeviceState(
                reportSize: reportSize,
                deviceInfo: CTAPHIDInitResponse(
                    nonce: [], channel: 0, majorVersion: 1, minorVersion: 0, buildVersion: 0,
                    capabilities: [.cbor, .wink]))
        }
        var inbound: [[UInt8]] = []
        var hostility: Hostility
        var hostileRequests: Int
        var busyInits: Int
        var keepaliveForever = false
        var keepaliveChannel: UInt32 = 0
        var keepaliveCount = 0
        var pendingTransaction: UInt64?
        var swallowInit = false
        var cancels = 0
        var requestsSeen = 0
        var garbageSeed: UInt64 = 0x9E37_79B9_7F4A_7C15
    }

    let reportSize: Int
    private let core: Mutex<Core>

    init(hostility: Hostility = .silent, hostileRequests: Int = 0, busyInits: Int = 0, reportSize: Int = 64) {
        self.reportSize = reportSize
        self.core = Mutex(
            Core(
                device: Core.device(reportSize: reportSize), hostility: hostility,
                hostileRequests: hostileRequests, busyInits: busyInits))
    }

    var cancels: Int { core.withLock { $0.cancels } }

    static func pad(_ bytes: [UInt8], to size: Int = 64) -> [UInt8] {
        bytes + Array(repeating: 0, count: max(0, size - bytes.count))
    }

    static func header(_ channel: UInt32) -> [UInt8] {
        [
            UInt8(channel >> 24), UInt8(channel >> 16 & 0xFF), UInt8(channel >> 8 & 0xFF),
            UInt8(channel & 0xFF),
        ]
    }

    func write(_ report: [UInt8]) async throws(TransportError) {
        let size = reportSize
        core.withLock { core in
            if report.count > 4, report[4] == 0x86, core.swallowInit { return }
            if report.count > 4, report[4] == 0x86, core.busyInits > 0,
                let channel = CTAPHIDPacket.channel(of: report)
            {
                core.busyInits -= 1
                core.inbound.append(Self.pad(Self.header(channel) + [0xBF, 0x00, 0x01, 0x06], to: size))
                return
            }
            for action in core.device.receive(report, at: .now) {
                switch action {
                case .send(let message):
                    core.inbound += (try? message.reports(reportSize: size)) ?? []
                case .cancel(let channel):
                    core.cancels += 1
                    core.keepaliveForever = false
                    if let pending = core.pendingTransaction { _ = core.device.finish(transaction: pending) }
                    core.pendingTransaction = nil
                    core.inbound +=
                        (try? CTAPHIDMessage(channel: channel, command: .cbor, payload: [0x2D])
                            .reports(reportSize: size)) ?? []
                case .process(let message, let transaction):
                    core.requestsSeen += 1
                    if message.command == .cbor, core.hostileRequests > 0 {
                        core.hostileRequests -= 1
                        Self.misbehave(&core, channel: message.channel, size: size)
                        if core.keepaliveForever {
                            core.pendingTransaction = transaction
                        } else {
                            _ = core.device.finish(transaction: transaction)
                        }
                    } else {
                        _ = core.device.finish(transaction: transaction)
                        let reply = CTAPHIDMessage(
                            channel: message.channel, command: message.command,
                            payload: [0x00] + message.payload)
                        core.inbound += (try? reply.reports(reportSize: size)) ?? []
                    }
                }
            }
        }
    }

    private static func misbehave(_ core: inout Core, channel: UInt32, size: Int) {
        let header = Self.header(channel)
        switch core.hostility {
        case .silent:
            break
        case .keepaliveForever:
            // Both statuses at once, then "still processing" forever.
            core.inbound.append(pad(header + [0xBB, 0x00, 0x01, 0x01], to: size))
            core.inbound.append(pad(header + [0xBB, 0x00, 0x01, 0x02], to: size))
            core.keepaliveForever = true
            core.keepaliveChannel = channel
        case .keepalivesThenReply:
            core.inbound.append(pad(header + [0xBB, 0x00, 0x01, 0x01], to: size))
            core.inbound.append(pad(header + [0xBB, 0x00, 0x01, 0x02], to: size))
            core.inbound +=
                (try? CTAPHIDMessage(channel: channel, command: .cbor, payload: [0x00]).reports(
                    reportSize: size)) ?? []
        case .wrongChannel:
            core.inbound +=
                (try? CTAPHIDMessage(channel: channel &+ 1, command: .cbor, payload: [0]).reports(
                    reportSize: size)) ?? []
        case .sequenceGap:
            core.inbound.append(pad(header + [0x90, 0x00, 0x64], to: size))
            core.inbound.append(pad(header + [0x01], to: size))
        case .sequenceRepeat:
            core.inbound.append(pad(header + [0x90, 0x00, 0xB0], to: size))
            core.inbound.append(pad(header + [0x00], to: size))
            core.inbound.append(pad(header + [0x00], to: size))
        case .lengthOverMaximum:
            core.inbound.append(pad(header + [0x90, 0x1D, 0xBA], to: size))
        case .initializationMidMessage:
            core.inbound.append(pad(header + [0x90, 0x00, 0x64], to: size))
            core.inbound.append(pad(header + [0x90, 0x00, 0x01, 0x00], to: size))
        case .truncatedReport:
            core.inbound.append(header + [0x90, 0x00, 0x01])
        case .error(let code):
            core.inbound.append(pad(header + [0xBF, 0x00, 0x01, code], to: size))
        // An error tells the host the request is dead; answer the next one normally.
        case .garbage:
            for index in 0..<8 {
                var report: [UInt8] = index.isMultiple(of: 2) ? header : []
                while report.count < size {
                    core.garbageSeed =
                        core.garbageSeed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    report.append(UInt8(truncatingIfNeeded: core.garbageSeed >> 33))
                }
                core.inbound.append(report)
            }
        }
    }

    func read(timeout: Duration) async throws(TransportError) -> [UInt8]? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let next: [UInt8]? = core.withLock { core in
                if !core.inbound.isEmpty { return core.inbound.removeFirst() }
                if core.keepaliveForever {
                    core.keepaliveCount += 1
                    let status: UInt8 = core.keepaliveCount.isMultiple(of: 2) ? 2 : 1
                    return Self.pad(
                        Self.header(core.keepaliveChannel) + [0xBB, 0x00, 0x01, status], to: reportSize)
                }
                return nil
            }
            if let next {
                if core.withLock({ $0.keepaliveForever }) { try? await Task.sleep(for: .milliseconds(5)) }
                return next
            }
            let remaining = deadline - .now
            guard remaining > .zero else { return nil }
            do {
                try await Task.sleep(for: min(remaining, .milliseconds(10)))
            } catch {
                return nil
            }
        }
    }

    func close() async {}

    /// Makes the device ignore INIT entirely.
    func swallowInit() {
        core.withLock { $0.swallowInit = true }
    }

    /// Stops misbehaving (for the recovery check after "busy forever").
    func behave() {
        core.withLock {
            $0.hostileRequests = 0
            $0.keepaliveForever = false
        }
    }
}
