import Foundation
import TestProcesses
import Testing
import VirtualAuthenticator

/// python-fido2's ClientPin drives the key through a pipe: its PIN/UV auth protocol one or two
/// (an independent implementation) sets and changes the PIN, gets tokens with permissions
/// and makes a credential and an assertion with them.
@Suite("VirtualKey clientPIN as python-fido2 drives it")
struct VirtualKeyPINPythonTests {
    /// A CtapDevice whose `call` writes each CTAPHID_CBOR request as a hex line to stdout and
    /// reads the reply from stdin; the test answers with the virtual key.
    static let prelude = """
        import json, sys
        from hashlib import sha256
        from fido2.ctap import CtapDevice, CtapError
        from fido2.ctap2 import Ctap2
        from fido2.ctap2.pin import ClientPin, PinProtocolV1, PinProtocolV2

        class Pipe(CtapDevice):
            @property
            def capabilities(self):
                return 0x04
            def call(self, cmd, data=b"", event=None, on_keepalive=None):
                sys.stdout.write(bytes(data).hex() + "\\n")
                sys.stdout.flush()
                return bytes.fromhex(sys.stdin.readline().strip())
            @classmethod
            def list_devices(cls):
                return iter([])

        """

    static let pinScript = """
        version = int(sys.argv[1])
        protocol = PinProtocolV1() if version == 1 else PinProtocolV2()
        ctap = Ctap2(Pipe())
        out = {"clientPinBefore": ctap.info.options.get("clientPin"), "protocols": ctap.info.pin_uv_protocols}
        pin = ClientPin(ctap, protocol)
        pin.set_pin("1234abcd")
        out["clientPinAfter"] = ctap.get_info().options.get("clientPin")
        out["retries"] = pin.get_pin_retries()[0]
        try:
            pin.get_pin_token("wrong-pin", ClientPin.PERMISSION.MAKE_CREDENTIAL, "example.org")
        except CtapError as e:
            out["wrongPin"] = int(e.code)
        out["retriesAfterWrong"] = pin.get_pin_retries()[0]
        token = pin.get_pin_token("1234abcd", ClientPin.PERMISSION.MAKE_CREDENTIAL, "example.org")
        cdh = sha256(b"make").digest()
        att = ctap.make_credential(
            cdh, {"id": "example.org", "name": "Example"}, {"id": b"\\x01\\x02", "name": "bob"},
            [{"type": "public-key", "alg": -7}],
            pin_uv_param=protocol.authenticate(token, cdh), pin_uv_protocol=version)
        out["mcFlags"] = att.auth_data.flags
        pin.change_pin("1234abcd", "new-pin-5678")
        token = pin.get_pin_token("new-pin-5678", ClientPin.PERMISSION.GET_ASSERTION, "example.org")
        cdh = sha256(b"get").digest()
        credential = att.auth_data.credential_data
        assertion = ctap.get_assertion(
            "example.org", cdh, [{"type": "public-key", "id": credential.credential_id}],
            pin_uv_param=protocol.authenticate(token, cdh), pin_uv_protocol=version)
        assertion.verify(cdh, credential.public_key)
        out["gaFlags"] = assertion.auth_data.flags
        try:
            pin.get_pin_token("1234abcd", ClientPin.PERMISSION.GET_ASSERTION)
        except CtapError as e:
            out["oldPin"] = int(e.code)
        legacy = pin.get_pin_token("new-pin-5678")
        cdh = sha256(b"legacy").digest()
        att = ctap.make_credential(
            cdh, {"id": "example.org"}, {"id": b"\\x03", "name": "carol"}, [{"type": "public-key", "alg": -7}],
            pin_uv_param=protocol.authenticate(legacy, cdh), pin_uv_protocol=version)
        out["legacyMcFlags"] = att.auth_data.flags
        print("DONE " + json.dumps(out))
        sys.stdout.flush()
        """

    static let uvScript = """
        version = int(sys.argv[1])
        protocol = PinProtocolV1() if version == 1 else PinProtocolV2()
        ctap = Ctap2(Pipe())
        pin = ClientPin(ctap, protocol)
        out = {"uv": ctap.info.options.get("uv"), "uvRetries": pin.get_uv_retries()}
        token = pin.get_uv_token(ClientPin.PERMISSION.MAKE_CREDENTIAL, "example.org")
        cdh = sha256(b"uv").digest()
        att = ctap.make_credential(
            cdh, {"id": "example.org"}, {"id": b"\\x04", "name": "dave"}, [{"type": "public-key", "alg": -7}],
            pin_uv_param=protocol.authenticate(token, cdh), pin_uv_protocol=version)
        out["mcFlags"] = att.auth_data.flags
        print("DONE " + json.dumps(out))
        sys.stdout.flush()
        """

    @Test(arguments: [1, 2]) func pythonFido2ClientPin(version: Int) async throws {
        guard let view = try await Self.drive(try makeKey(), script: Self.pinScript, version: version) else {
            return
        }
        #expect(view["clientPinBefore"] as? Bool == false)
        #expect(view["protocols"] as? [Int] == [2, 1])
        #expect(view["clientPinAfter"] as? Bool == true)
        #expect(view["retries"] as? Int == 8)
        #expect(view["wrongPin"] as? Int == 0x31)
        #expect(view["retriesAfterWrong"] as? Int == 7)
        // UP | UV | AT, then UP | UV.
        #expect(view["mcFlags"] as? Int == 0x45)
        #expect(view["gaFlags"] as? Int == 0x05)
        #expect(view["oldPin"] as? Int == 0x31)
        #expect(view["legacyMcFlags"] as? Int == 0x45)
    }

    @Test(arguments: [1, 2]) func pythonFido2UVToken(version: Int) async throws {
        let key = try makeKey(.init(options: ["rk": true, "up": true, "uv": true], maxUVRetries: 5))
        guard let view = try await Self.drive(key, script: Self.uvScript, version: version) else { return }
        #expect(view["uv"] as? Bool == true)
        #expect(view["uvRetries"] as? Int == 5)
        #expect(view["mcFlags"] as? Int == 0x45)
    }

    /// Runs `script` after the prelude with python-fido2, serving its requests with `key`;
    /// returns what it printed after "DONE ", or nil (with an issue) when Python is not set.
    static func drive(_ key: VirtualKey, script: String, version: Int) async throws -> [String: Any]? {
        guard let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"] else {
            Issue.record(
                "SECURITYKEY_PYTHON is not set: point it at a Python with python-fido2 (e.g. .venv/bin/python3)."
            )
            return nil
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", prelude + script, String(version)]
        let toPython = Pipe()
        let fromPython = Pipe()
        let errors = Pipe()
        process.standardInput = toPython
        process.standardOutput = fromPython
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let lines = LineReader(handle: fromPython.fileHandleForReading)
        var result: [String: Any]?
        // Each line is one CTAPHID_CBOR request; a bounded number keeps a confused script from looping.
        for _ in 0..<64 {
            guard let line = try await lines.next() else { break }
            if line.hasPrefix("DONE ") {
                result =
                    try JSONSerialization.jsonObject(with: Data(line.dropFirst(5).utf8)) as? [String: Any]
                break
            }
            let request = try #require(
                VirtualKeyPythonTests.bytes(hex: line), "python-fido2 sent no hex: \(line)")
            let reply = await key.handleCBOR(request, keepalive: { _ in })
            toPython.fileHandleForWriting.write(Data((VirtualKeyPythonTests.hex(reply) + "\n").utf8))
        }
        try toPython.fileHandleForWriting.close()
        let stderr = try await TestProcess.onThread { () -> String in
            process.waitUntilExit()
            return String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }
        let view: [String: Any] = try #require(result, "python-fido2 did not finish: \(stderr)")
        return view
    }
}

/// Reads newline-terminated lines from a pipe (blocking; for the test's own child process).
/// Lines of a child's output, each read on a thread of its own (`TestProcess.onThread`): Python
/// starting up takes a second or more, and the cooperative pool must not wait for it.
final class LineReader: @unchecked Sendable {
    // One read at a time: `next()` is awaited before the next call.
    let handle: FileHandle
    private var buffer: [UInt8] = []

    init(handle: FileHandle) { self.handle = handle }

    func next() async throws -> String? {
        try await TestProcess.onThread { self.nextBlocking() }
    }

    private func nextBlocking() -> String? {
        while true {
            if let end = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeSubrange(...end)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer += chunk
        }
    }
}

extension VirtualKeyPythonTests {
    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < digits.count {
            guard let byte = UInt8(String(decoding: digits[i..<(i + 2)], as: UTF8.self), radix: 16) else {
                return nil
            }
            out.append(byte)
            i += 2
        }
        return out
    }
}
