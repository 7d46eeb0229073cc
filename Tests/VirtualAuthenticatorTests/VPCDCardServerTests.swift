import Foundation
import TestProcesses
import Testing
import Transport
import VirtualAuthenticator

#if canImport(Glibc)
    import Glibc
#endif

/// Plays vpcd (the reader driver side) on a local port, so the card server's framing, control
/// codes and APDU answers can be checked byte by byte without pcscd. Blocking socket calls run on
/// their own threads, never on the cooperative pool.
final class FakeVPCD: @unchecked Sendable {
    private let listener: Int32
    private var client: Int32 = -1
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 1) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit {
        if client >= 0 { close(client) }
        close(listener)
    }

    /// Waits (up to 5 s) for the card to connect.
    func accept() async throws {
        let listener = listener
        let fd = try await TestProcess.onThread { () -> Int32 in
            var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 30_000) == 1 else { throw POSIXError(.ETIMEDOUT) }
            return Glibc.accept(listener, nil, nil)
        }
        guard fd >= 0 else { throw POSIXError(.ECONNABORTED) }
        client = fd
    }

    /// Drops the card's connection, as a restarting vpcd does.
    func disconnect() {
        if client >= 0 { close(client) }
        client = -1
    }

    /// Sends one message and, if `expectReply`, returns the card's answer (within 5 s).
    func send(_ payload: [UInt8], expectReply: Bool = true) async throws -> [UInt8]? {
        let fd = client
        return try await TestProcess.onThread { () -> [UInt8]? in
            let frame = [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
            guard Glibc.send(fd, frame, frame.count, Int32(MSG_NOSIGNAL)) == frame.count else {
                throw POSIXError(.EPIPE)
            }
            guard expectReply else { return nil }
            let header = try Self.read(fd, 2)
            return try Self.read(fd, Int(header[0]) << 8 | Int(header[1]))
        }
    }

    private static func read(_ fd: Int32, _ count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 30_000) == 1 else { throw POSIXError(.ETIMEDOUT) }
            let n = buffer.withUnsafeMutableBytes { raw in
                recv(fd, raw.baseAddress.map { $0 + got }, count - got, 0)
            }
            guard n > 0 else { throw POSIXError(.ECONNRESET) }
            got += n
        }
        return buffer
    }
}

/// Runs a card server against a fake vpcd while `body` runs.
func withFakeVPCD(
    _ handler: any CTAPMessageHandler, shortAPDUsOnly: Bool = false,
    _ body: @Sendable (FakeVPCD) async throws -> Void
) async throws {
    let vpcd = try FakeVPCD()
    let server = VPCDCardServer(
        handler: handler,
        configuration: .init(
            port: vpcd.port, shortAPDUsOnly: shortAPDUsOnly, reconnectDelay: .milliseconds(20)))
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await server.run() }
        do {
            try await vpcd.accept()
            try await body(vpcd)
        } catch {
            group.cancelAll()
            throw error
        }
        group.cancelAll()
    }
}

/// Sends `message` and expects exactly `expected` back.
func expectReply(
    _ vpcd: FakeVPCD, _ message: [UInt8], _ expected: [UInt8],
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let reply = try await vpcd.send(message)
    #expect(reply == expected, sourceLocation: sourceLocation)
}

let selectFIDO: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x08, 0xA0, 0x00, 0x00, 0x06, 0x47, 0x2F, 0x00, 0x01]

/// The card server as vpcd sees it. Expected bytes come from the vpcd protocol (vsmartcard's
/// vpcd.c: control codes 0/1/2/4), ISO/IEC 7816-4 status words and CTAP 2.1 §11.3.
@Suite struct VPCDCardServerTests {
    @Test func controlCodes() async throws {
        let handler = EchoHandler()
        try await withFakeVPCD(handler) { vpcd in
            try await expectReply(vpcd, [0x04], [0x3B, 0x80, 0x80, 0x01, 0x01])
            _ = try await vpcd.send([0x01], expectReply: false)  // power on
            _ = try await vpcd.send([0x00], expectReply: false)  // power off
            _ = try await vpcd.send([0x02], expectReply: false)  // reset
            // Each control message gets no answer, so the next answer belongs to the ATR request.
            try await expectReply(vpcd, [0x04], [0x3B, 0x80, 0x80, 0x01, 0x01])
            #expect(handler.powerCycles.count == 2)
        }
    }

    @Test func selectAndStatusWords() async throws {
        try await withFakeVPCD(EchoHandler()) { vpcd in
            // Before SELECT the applet is not reachable.
            try await expectReply(vpcd, [0x80, 0x10, 0x80, 0x00, 0x01, 0x04, 0x00], [0x69, 0x85])
            // Another AID: file or application not found.
            try await expectReply(vpcd, [0x00, 0xA4, 0x04, 0x00, 0x02, 0xA0, 0x00], [0x6A, 0x82])
            try await expectReply(vpcd, selectFIDO, Array("U2F_V2".utf8) + [0x90, 0x00])
            // getInfo echoed with status 00, as NFCCTAP_MSG (P1 0x80) and Le 00.
            try await expectReply(
                vpcd, [0x80, 0x10, 0x80, 0x00, 0x01, 0x04, 0x00], [0x00, 0x04, 0x90, 0x00])
            // GET RESPONSE with nothing pending, an unknown instruction, an unknown class, a
            // malformed APDU.
            try await expectReply(vpcd, [0x00, 0xC0, 0x00, 0x00, 0x00], [0x69, 0x85])
            try await expectReply(vpcd, [0x00, 0x77, 0x00, 0x00], [0x6D, 0x00])
            try await expectReply(vpcd, [0x40, 0x10, 0x00, 0x00], [0x6E, 0x00])
            try await expectReply(vpcd, [0x80, 0x10, 0x00, 0x00, 0x05, 0x01], [0x67, 0x00])
            // NFCCTAP_GETRESPONSE with no message pending.
            try await expectReply(vpcd, [0x80, 0x11, 0x00, 0x00, 0x00], [0x69, 0x85])
        }
    }

    @Test func commandChainingAndResponseChaining() async throws {
        try await withFakeVPCD(EchoHandler()) { vpcd in
            _ = try await vpcd.send(selectFIDO)
            let message = (0..<300).map { UInt8($0 & 0xFF) }
            // Two segments, the first with the chaining bit (CLA 0x90), Le only on the last.
            try await expectReply(vpcd, [0x90, 0x10, 0x80, 0x00, 0xC8] + message[0..<200], [0x90, 0x00])
            let first = try await vpcd.send([0x80, 0x10, 0x80, 0x00, 0x64] + message[200..<300] + [0x00])
            // 301 reply bytes: 256 now, then 61 2D (45 more).
            let expected = [0x00] + message
            #expect(first == Array(expected[0..<256]) + [0x61, 0x2D])
            let rest = try await vpcd.send([0x00, 0xC0, 0x00, 0x00, 0x2D])
            #expect(rest == Array(expected[256...]) + [0x90, 0x00])
            // A chain whose header changes midway is refused (last command of chain expected).
            try await expectReply(vpcd, [0x90, 0x10, 0x80, 0x00, 0x01, 0x01], [0x90, 0x00])
            try await expectReply(vpcd, [0x80, 0x11, 0x00, 0x00, 0x01, 0x01], [0x68, 0x83])
        }
    }

    @Test func extendedAPDUsAndShortOnlyMode() async throws {
        let message = [UInt8(0x01)] + (0..<400).map { UInt8($0 & 0xFF) }
        let extended: [UInt8] = [0x80, 0x10, 0x80, 0x00, 0x00, 0x01, 0x91] + message + [0x00, 0x00]
        try await withFakeVPCD(EchoHandler()) { vpcd in
            _ = try await vpcd.send(selectFIDO)
            try await expectReply(vpcd, extended, [0x00] + message + [0x90, 0x00])
        }
        try await withFakeVPCD(EchoHandler(), shortAPDUsOnly: true) { vpcd in
            _ = try await vpcd.send(selectFIDO)
            try await expectReply(vpcd, extended, [0x67, 0x00])
        }
    }

    @Test func pendingMessageAnswers9100AndCancels() async throws {
        let handler = DelayHandler(delay: .seconds(20))
        try await withFakeVPCD(handler) { vpcd in
            _ = try await vpcd.send(selectFIDO)
            // Still processing: 9100 with the keepalive status (2: user presence needed).
            try await expectReply(vpcd, [0x80, 0x10, 0x80, 0x00, 0x01, 0x01, 0x00], [0x02, 0x91, 0x00])
            try await expectReply(vpcd, [0x80, 0x11, 0x00, 0x00, 0x00], [0x02, 0x91, 0x00])
            // A second message while one is pending is refused.
            try await expectReply(vpcd, [0x80, 0x10, 0x80, 0x00, 0x01, 0x01, 0x00], [0x69, 0x85])
            // Cancel through NFCCTAP_GETRESPONSE P1 0x11; poll until the handler's answer.
            var reply = try await vpcd.send([0x80, 0x11, 0x11, 0x00, 0x00])
            let deadline = ContinuousClock.now + .seconds(5)
            while reply?.suffix(2) == [0x91, 0x00], ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                reply = try await vpcd.send([0x80, 0x11, 0x00, 0x00, 0x00])
            }
            // CTAP2_ERR_KEEPALIVE_CANCEL (0x2D) with 9000.
            #expect(reply == [0x2D, 0x90, 0x00])
            #expect(handler.cancelled.count == 1)
        }
    }

    @Test func reconnectsWhenVPCDRestarts() async throws {
        try await withFakeVPCD(EchoHandler()) { vpcd in
            try await expectReply(vpcd, [0x04], [0x3B, 0x80, 0x80, 0x01, 0x01])
            vpcd.disconnect()
            try await vpcd.accept()
            try await expectReply(vpcd, [0x04], [0x3B, 0x80, 0x80, 0x01, 0x01])
        }
    }
}
