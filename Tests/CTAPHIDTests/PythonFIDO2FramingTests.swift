import Foundation
import Testing

@testable import CTAPHID

/// CTAPHID framing compared with python-fido2's CtapHidDevice, run live (SECURITYKEY_PYTHON):
/// python-fido2 frames the request (we compare its reports with ours) and reassembles a reply we
/// framed (we compare its payload with what we sent). Fails with a message when python is absent.
@Suite struct PythonFIDO2FramingTests {
    static let script = #"""
        import json, struct, sys
        from fido2.hid import CtapHidDevice
        from fido2.hid.base import CtapHidConnection, HidDescriptor

        class Scripted(CtapHidConnection):
            def __init__(self, size, replies):
                self.size, self.replies, self.written = size, list(replies), []
            def write_packet(self, data):
                self.written.append(bytes(data))
                if len(self.written) == 1:  # INIT on broadcast: answer with channel 0x01020304
                    nonce = data[7:15]
                    payload = nonce + bytes.fromhex("01020304") + bytes([2, 1, 2, 3, 5])
                    pkt = struct.pack(">IBH", 0xFFFFFFFF, 0x86, len(payload)) + payload
                    self.replies.insert(0, pkt.ljust(self.size, b"\0"))
            def read_packet(self):
                return self.replies.pop(0)
            def close(self):
                pass

        out = []
        for case in json.load(sys.stdin):
            size = case["size"]
            conn = Scripted(size, [bytes.fromhex(r) for r in case["reply"]])
            dev = CtapHidDevice(HidDescriptor("test", 0, 0, size, size, None, None), conn)
            payload = dev.call(case["command"], bytes.fromhex(case["payload"]))
            out.append({"written": [w.hex() for w in conn.written[1:]], "reply": payload.hex(),
                        "capabilities": int(dev.capabilities), "version": list(dev.device_version)})
        print(json.dumps(out))
        """#

    struct Case {
        var size: Int
        var command: CTAPHIDCommand
        var payload: [UInt8]
        var reply: [UInt8]
    }

    static let cases: [Case] = [
        Case(size: 64, command: .cbor, payload: [0x04], reply: [0x00, 0xA0]),
        Case(size: 64, command: .cbor, payload: Array(0..<57), reply: Array(repeating: 7, count: 58)),
        Case(
            size: 64, command: .msg, payload: (0..<7609).map { UInt8(truncatingIfNeeded: $0) },
            reply: (0..<7609).map { UInt8(truncatingIfNeeded: $0 &* 3) }),
        Case(size: 64, command: .ping, payload: [], reply: []),
        Case(
            size: 32, command: .cbor, payload: (0..<300).map { UInt8(truncatingIfNeeded: $0) },
            reply: Array(0..<100)),
    ]

    @Test func framesLikePythonFIDO2() async throws {
        let channel: UInt32 = 0x0102_0304
        var input: [[String: Any]] = []
        for item in Self.cases {
            let reply = try CTAPHIDMessage(channel: channel, command: item.command, payload: item.reply)
                .reports(reportSize: item.size)
            input.append([
                "size": item.size, "command": Int(item.command.rawValue), "payload": Hex.encode(item.payload),
                "reply": reply.map { Hex.encode($0) },
            ])
        }
        let json = String(decoding: try JSONSerialization.data(withJSONObject: input), as: UTF8.self)
        let output = try await PythonFIDO2.run(Self.script, input: json)
        let results = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]] ?? []
        try #require(results.count == Self.cases.count)
        for (item, result) in zip(Self.cases, results) {
            let ours = try CTAPHIDMessage(channel: channel, command: item.command, payload: item.payload)
                .reports(reportSize: item.size).map { Hex.encode($0) }
            #expect(
                result["written"] as? [String] == ours,
                "request framing, \(item.command) \(item.payload.count) bytes")
            #expect(
                result["reply"] as? String == Hex.encode(item.reply),
                "reply reassembly, \(item.reply.count) bytes")
            #expect(result["capabilities"] as? Int == 5)
            #expect(result["version"] as? [Int] == [1, 2, 3])
        }
    }
}
