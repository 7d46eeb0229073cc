import Foundation
import Testing
import VirtualAuthenticator

/// python-fido2's CtapHidDevice as the host, over a UDP CtapHidConnection, against our UDP
/// server: an independent implementation's view of INIT, CBOR, PING, WINK, KEEPALIVE and CANCEL.
/// Fails with a message when SECURITYKEY_PYTHON is not set.
@Suite struct UDPPythonFIDO2Tests {
    static let script = #"""
        import json, sys, threading
        from fido2.hid import CTAPHID
        from udp_hid import udp_device

        port = int(sys.argv[1])
        # A generous read timeout: the server runs in this test process, beside CPU-bound suites
        # (RSA key generation, certificate paths) that can hold a 2-core machine for seconds.
        dev = udp_device(port, timeout=30)
        result = {"capabilities": int(dev.capabilities), "version": list(dev.device_version), "protocol": dev.version}
        if sys.argv[2] == "fast":
            big = bytes(i * 7 % 256 for i in range(6000))
            result["echo"] = dev.call(CTAPHID.CBOR, big) == b"\0" + big
            result["ping"] = dev.ping(b"hello").hex()
            dev.wink()
        else:
            seen = []
            event = threading.Event()
            def on_keepalive(status):
                seen.append(int(status))
                event.set()
            # The HID layer hands back the CTAP2 status the cancelled request ended with.
            result["cancel"] = dev.call(CTAPHID.CBOR, b"\x04", event, on_keepalive).hex()
            result["keepalive"] = sorted(set(seen))
        print(json.dumps(result))
        """#

    static func runPython(port: UInt16, mode: String) async throws -> String {
        try await runPythonFIDO2(script, arguments: [String(port), mode])
    }

    static func parse(_ text: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
    }

    @Test func pythonFIDO2TalksToTheServer() async throws {
        let handler = CTAPHIDTestHandler()
        // A 6000-byte message is ~100 datagrams: on a loaded machine python-fido2 can pause longer
        // than the spec's 500 ms between two of them. This test is about interoperation, not
        // about that timer (UDPCTAPHIDServerTests checks it).
        let result = try Self.parse(
            try await withUDPServer(handler, messageTimeout: .seconds(10)) { server in
                try await Self.runPython(port: server.port, mode: "fast")
            })
        #expect(result["capabilities"] as? Int == 0x05)  // WINK | CBOR
        #expect(result["version"] as? [Int] == [1, 0, 0])
        #expect(result["protocol"] as? Int == 2)
        #expect(result["echo"] as? Bool == true)
        #expect(result["ping"] as? String == "68656c6c6f")
        #expect(handler.winks.withLock { $0 } == 1)
    }

    @Test func pythonFIDO2SeesKeepaliveAndCancels() async throws {
        let handler = CTAPHIDTestHandler(delay: .seconds(20))
        let result = try Self.parse(
            try await withUDPServer(handler) { server in
                try await Self.runPython(port: server.port, mode: "slow")
            })
        #expect(result["keepalive"] as? [Int] == [2])  // STATUS_UPNEEDED
        #expect(result["cancel"] as? String == "2d")  // CTAP2_ERR_KEEPALIVE_CANCEL
        #expect(handler.cancelled.withLock { $0 } == 1)
    }
}

/// Runs `script` under SECURITYKEY_PYTHON (python-fido2) and returns its standard output,
/// waiting without blocking a cooperative thread; records an issue when python is unavailable.
func runPythonFIDO2(_ script: String, arguments: [String]) async throws -> String {
    guard let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"], !python.isEmpty else {
        Issue.record("SECURITYKEY_PYTHON is not set: point it at a python3 with python-fido2 (make pydeps).")
        return "{}"
    }
    let result: ChildProcessResult
    do {
        // scripts/python's modules (udp_hid.py) importable from the inline script.
        let path = "import sys; sys.path.insert(0, \(String(reflecting: pythonScriptsDirectory.path)))\n"
        result = try await runChild(python, ["-c", path + script] + arguments)
    } catch {
        Issue.record("python-fido2 could not start: \(error)")
        return "{}"
    }
    guard result.status == 0 else {
        Issue.record("python-fido2 failed (exit \(result.status)): \(result.errors)")
        return "{}"
    }
    return result.output
}
