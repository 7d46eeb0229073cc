import Foundation
import NFCTransport
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// Where the PC/SC test bed (scripts/pcsc-testbed.sh) put pcscd and vpcd.
struct VPCDTestBed: Sendable {
    var port: UInt16
    var readers: [String]

    static let howToRun =
        "These tests need pcscd with the vpcd reader: run them as "
        + "`scripts/pcsc-testbed.sh run -- swift test --skip-build --filter VPCD`."

    /// The bed from the environment, or a recorded failure saying how to start it.
    static func fromEnvironment(sourceLocation: SourceLocation = #_sourceLocation) -> VPCDTestBed? {
        let env = ProcessInfo.processInfo.environment
        guard env["PCSCLITE_CSOCK_NAME"] != nil, let portText = env["SECURITYKEY_VPCD_PORT"],
            let port = UInt16(portText)
        else {
            Issue.record(Comment(rawValue: howToRun), sourceLocation: sourceLocation)
            return nil
        }
        let readers = (env["SECURITYKEY_VPCD_READERS"] ?? "Virtual PCD 00 00|Virtual PCD 00 01")
            .split(separator: "|").map(String.init)
        guard readers.count >= 2 else {
            Issue.record(
                "SECURITYKEY_VPCD_READERS names fewer than two readers.", sourceLocation: sourceLocation)
            return nil
        }
        return VPCDTestBed(port: port, readers: readers)
    }

    func configuration(slot: Int = 0, shortAPDUsOnly: Bool = false) -> VPCDCardServer.Configuration {
        VPCDCardServer.Configuration(
            host: "127.0.0.1", port: port + UInt16(slot), shortAPDUsOnly: shortAPDUsOnly,
            reconnectDelay: .milliseconds(50))
    }
}

/// Runs a card server for `handler` on `slot` while `body` runs, then removes the card.
func withCard<T: Sendable>(
    _ handler: any CTAPMessageHandler, bed: VPCDTestBed, slot: Int = 0, shortAPDUsOnly: Bool = false,
    _ body: @Sendable (VPCDCardServer) async throws -> T
) async throws -> T {
    let server = VPCDCardServer(
        handler: handler, configuration: bed.configuration(slot: slot, shortAPDUsOnly: shortAPDUsOnly))
    return try await withThrowingTaskGroup(of: Void.self, returning: T.self) { group in
        group.addTask { await server.run() }
        do {
            let result = try await body(server)
            group.cancelAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}

/// Opens the card in `reader` once pcscd has noticed it (within 10 s).
func openWhenPresent(
    _ reader: String, options: PCSCConnection.Options = .init()
) async throws -> PCSCConnection {
    let deadline = ContinuousClock.now + .seconds(10)
    while true {
        let result = await attemptOpen(reader, options: options)
        switch result {
        case .success(let connection):
            return connection
        case .failure(let failure):
            let retry = failure.code == .noDevice || failure.code == .deviceError
            if !retry || ContinuousClock.now > deadline { throw failure }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

func attemptOpen(
    _ reader: String, options: PCSCConnection.Options
) async -> Result<PCSCConnection, TransportError> {
    do {
        return .success(try await PCSCDiscovery(options: options).connect(uri: "pcsc:\(reader)"))
    } catch {
        return .failure(error)
    }
}

/// Answers every CTAP2 message with status 00 followed by the message itself.
struct EchoHandler: CTAPMessageHandler {
    let powerCycles = Counter()
    func handleCBOR(_ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async
        -> [UInt8]
    {
        [0x00] + message
    }
    func handleU2F(_ apdu: [UInt8]) async -> [UInt8] {
        // U2F_VERSION answers "U2F_V2" (FIDO U2F raw message formats §6); others echo the APDU.
        if apdu.count >= 2, apdu[1] == 0x03 { return Array("U2F_V2".utf8) + [0x90, 0x00] }
        return apdu + [0x90, 0x00]
    }
    func powerCycle() async { powerCycles.increment() }
    func wink() async {}
}

/// Waits for "user presence" for `delay`, reporting keepalives; a cancelled wait answers
/// CTAP2_ERR_KEEPALIVE_CANCEL (0x2D) as the seam requires.
struct DelayHandler: CTAPMessageHandler {
    var delay: Duration
    let cancelled = Counter()
    let started = Counter()
    func handleCBOR(_ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async
        -> [UInt8]
    {
        started.increment()
        let end = ContinuousClock.now + delay
        keepalive(.userPresenceNeeded)
        while ContinuousClock.now < end {
            do { try await Task.sleep(for: .milliseconds(20)) } catch {
                cancelled.increment()
                return [0x2D]
            }
        }
        return [0x00] + message
    }
    func handleU2F(_ apdu: [UInt8]) async -> [UInt8] { [0x69, 0x85] }
    func powerCycle() async {}
    func wink() async {}
}

/// Replies with status 00 and `count` bytes of a pattern the test computes on its own.
struct BigReplyHandler: CTAPMessageHandler {
    var count: Int
    static func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(($0 * 7 + 3) & 0xFF) } }
    func handleCBOR(_ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async
        -> [UInt8]
    {
        [0x00] + Self.pattern(count)
    }
    func handleU2F(_ apdu: [UInt8]) async -> [UInt8] { Self.pattern(count) + [0x90, 0x00] }
    func powerCycle() async {}
    func wink() async {}
}

/// A thread-safe counter for observations made from handler and keepalive callbacks.
final class Counter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// Collects values from callbacks that run on any thread.
final class Recorder<T: Sendable>: Sendable {
    private let values = Mutex<[T]>([])
    func append(_ value: T) { values.withLock { $0.append(value) } }
    var all: [T] { values.withLock { $0 } }
}

/// Waits up to 10 s for an event of `kind` on `reader` among the events after the first `index`.
func waitForEvent(
    _ kind: PCSCReaderEvent.Kind, reader: String, in events: Recorder<PCSCReaderEvent>, after index: Int
) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !events.all.dropFirst(index).contains(where: { $0.kind == kind && $0.reader == reader }) {
        guard ContinuousClock.now < deadline else {
            Issue.record("no \(kind.rawValue) event for \(reader): \(events.all)")
            return
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// The python3 with python-fido2 the cross-checks use, or a recorded failure saying how to set it.
func pythonForCrossCheck(sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    guard let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"], !python.isEmpty else {
        Issue.record(
            "SECURITYKEY_PYTHON is unset: point it at a python3 with python-fido2 and pyscard (make pydeps; .venv/bin/python3).",
            sourceLocation: sourceLocation)
        return nil
    }
    return python
}

/// The repository's scripts/python directory.
let pythonScriptsDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("scripts/python")

/// Runs a program to completion (off the cooperative pool) and returns its status and stdout.
func runProcess(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    let result = try await runChild(executable, arguments)
    return (result.status, result.output)
}
