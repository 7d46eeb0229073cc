import Foundation
import Synchronization
import Testing
import Transport

@testable import VirtualAuthenticator

/// A misbehaving contactless card on a vpcd reader: it speaks vpcd's protocol (2-byte length,
/// control codes, APDUs), answers SELECT of the FIDO applet like a good card, and then answers
/// everything else the way its ``Behaviour`` says. It does not use ``VPCDCardServer`` or a
/// ``CTAPMessageHandler``: the point is to say what no good card would.
final class HostileCard: Sendable {
    /// How the card misbehaves after SELECT.
    enum Behaviour: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// `9100` (still processing) to NFCCTAP_MSG and every NFCCTAP_GETRESPONSE, cancel included.
        case endlessStillProcessing
        /// `6100` (more data) with no data, to every command and every GET RESPONSE.
        case endlessMoreDataEmpty
        /// `61FF` with 255 bytes to every command and every GET RESPONSE: response chaining
        /// that never ends and only grows.
        case endlessResponseChaining
        /// `6C01` (wrong Le, use 1) to every command, however often it is repeated.
        case endlessWrongLe
        /// `6883` (last command of the chain expected) to every command: the card wants more
        /// chained segments than there are.
        case endlessCommandChaining
        /// A status word no ISO 7816 card uses (`1234`).
        case garbageStatusWord
        /// One byte: too short to hold a status word.
        case truncatedResponse
        /// `6A82` (file not found) to NFCCTAP_MSG: a valid status word, wrong for a FIDO applet.
        case wrongStatusWord
        /// 60 000 bytes and `9000` to a command that asked for at most 256.
        case overlongResponse
        /// The card leaves (its vpcd connection closes) on NFCCTAP_MSG, before answering.
        case removedMidExchange
        /// SELECT answered, nothing else ever is.
        case selectOnly

        var testDescription: String { rawValue }
    }

    let behaviour: Behaviour
    /// How many APDUs after SELECT the card received.
    var apdusAfterSelect: Int { counts.withLock { $0 } }

    private let port: UInt16
    private let stop = CancellationSignal()
    private let finished = CancellationSignal()
    private let counts = Mutex(0)

    /// Connects to vpcd on `port` (on its own thread) and serves until ``stop()``.
    init(_ behaviour: Behaviour, port: UInt16) {
        self.behaviour = behaviour
        self.port = port
        let thread = Thread { [self] in
            self.serve()
            self.finished.cancel()
        }
        thread.name = "hostile-card"
        thread.start()
    }

    /// Takes the card off the reader and waits until its thread is done.
    func stopServing() {
        stop.cancel()
        while !finished.wait(.milliseconds(50)) {}
    }

    private func serve() {
        while !stop.isCancelled {
            guard let socket = try? VPCDSocket.connect(host: "127.0.0.1", port: port) else {
                if stop.wait(.milliseconds(50)) { return }
                continue
            }
            defer { socket.close() }
            var selected = false
            while !stop.isCancelled {
                guard let message = try? socket.readMessage(cancel: stop) else { return }
                if message.count == 1 {
                    // vpcd control codes: 4 asks for the ATR; power on, off and reset want no answer.
                    if message[0] == 4 { try? socket.writeMessage([0x3B, 0x80, 0x80, 0x01, 0x01]) }
                    continue
                }
                let ins = message.count > 1 ? message[1] : 0
                if ins == 0xA4 {  // SELECT (ISO 7816-4 §11.2.2)
                    selected = true
                    try? socket.writeMessage(Array("FIDO_2_0".utf8) + [0x90, 0x00])
                    continue
                }
                guard selected else {
                    try? socket.writeMessage([0x69, 0x85])
                    continue
                }
                counts.withLock { $0 += 1 }
                guard let reply = answer(ins: ins) else {
                    if behaviour == .removedMidExchange { return }
                    continue  // selectOnly: silence
                }
                try? socket.writeMessage(reply)
            }
        }
    }

    /// The answer to a command after SELECT; nil to say nothing.
    private func answer(ins: UInt8) -> [UInt8]? {
        switch behaviour {
        case .endlessStillProcessing: return [0x01, 0x91, 0x00]
        case .endlessMoreDataEmpty: return [0x61, 0x00]
        case .endlessResponseChaining: return [UInt8](repeating: 0xA5, count: 255) + [0x61, 0xFF]
        case .endlessWrongLe: return [0x6C, 0x01]
        case .endlessCommandChaining: return [0x68, 0x83]
        case .garbageStatusWord: return [0x12, 0x34]
        case .truncatedResponse: return [0x90]
        case .wrongStatusWord: return [0x6A, 0x82]
        case .overlongResponse: return [UInt8](repeating: 0x5A, count: 60_000) + [0x90, 0x00]
        case .removedMidExchange, .selectOnly: return nil
        }
    }
}
