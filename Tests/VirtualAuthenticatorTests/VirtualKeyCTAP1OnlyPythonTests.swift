import Foundation
import Testing
import VirtualAuthenticator

/// python-fido2 as the host of a `ctap1Only` virtual key over CTAPHID/UDP: its CtapHidDevice
/// reads the INIT capabilities and sends CTAPHID_CBOR, its Ctap1 registers, authenticates
/// (check-only and with presence) and asks the version, and its RegistrationData and
/// SignatureData verify the signatures. Fails with a message when SECURITYKEY_PYTHON is not set.
@Suite struct VirtualKeyCTAP1OnlyPythonTests {
    static let script = #"""
        import hashlib, json, sys
        from fido2.ctap import CtapError
        from fido2.ctap1 import Ctap1, ApduError, APDU
        from fido2.hid import CTAPHID
        from udp_hid import udp_device

        port = int(sys.argv[1])
        dev = udp_device(port, timeout=5)
        out = {"capabilities": int(dev.capabilities)}
        try:
            dev.call(CTAPHID.CBOR, b"\x04")
            out["cbor"] = "answered"
        except CtapError as e:
            out["cbor"] = int(e.code)
        ctap1 = Ctap1(dev)
        out["version"] = ctap1.get_version()
        app = hashlib.sha256(b"example.org").digest()
        challenge = hashlib.sha256(b"register").digest()
        reg = ctap1.register(challenge, app)
        reg.verify(app, challenge)  # raises unless the attestation signature verifies
        out["registered"] = True
        try:
            ctap1.authenticate(challenge, app, reg.key_handle, check_only=True)
            out["checkOnly"] = "signed"
        except ApduError as e:
            out["checkOnly"] = e.code
        try:
            ctap1.authenticate(challenge, hashlib.sha256(b"other.example").digest(), reg.key_handle, check_only=True)
            out["foreign"] = "signed"
        except ApduError as e:
            out["foreign"] = e.code
        first = ctap1.authenticate(challenge, app, reg.key_handle)
        first.verify(app, challenge, reg.public_key)
        second = ctap1.authenticate(challenge, app, reg.key_handle)
        second.verify(app, challenge, reg.public_key)
        out["userPresence"] = first.user_presence
        out["counters"] = [first.counter, second.counter]
        print(json.dumps(out))
        """#

    @Test func pythonFIDO2Ctap1DrivesAU2FOnlyKey() async throws {
        let key = try makeKey(.ctap1Only())
        let server = try UDPCTAPHIDServer(
            handler: key,
            configuration: .init(port: 0, capabilities: UDPCTAPHIDServer.Configuration.ctap1OnlyCapabilities))
        let output = try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask {
                try await server.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await runPythonFIDO2(Self.script, arguments: [String(server.port)])
        }
        let result = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] ?? [:]
        // CAPABILITY_WINK only: no CBOR, and NMSG clear (U2F messages are served).
        #expect(result["capabilities"] as? Int == 0x01)
        #expect(result["cbor"] as? Int == 0x01)  // ERR_INVALID_CMD
        #expect(result["version"] as? String == "U2F_V2")
        #expect(result["registered"] as? Bool == true)
        #expect(result["checkOnly"] as? Int == 0x6985)
        #expect(result["foreign"] as? Int == 0x6A80)
        #expect(result["userPresence"] as? Int == 1)
        let counters = result["counters"] as? [Int] ?? []
        #expect(counters.count == 2 && counters[1] > counters[0])
    }
}
