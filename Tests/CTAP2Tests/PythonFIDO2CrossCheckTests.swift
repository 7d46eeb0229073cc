import CBOR
import Foundation
import VectorFiles
import Testing

@testable import CTAP2

/// Compares this module with python-fido2 run live (SECURITYKEY_PYTHON): the bytes
/// python-fido2's Ctap2 sends for the same request, and its table of status codes.
/// These tests fail, with a message saying so, when SECURITYKEY_PYTHON is not set.
@Suite struct PythonFIDO2CrossCheckTests {
    /// Drives python-fido2's Ctap2 over a fake device and prints the last request it sent.
    static let captureScript = """
        import json, sys
        from fido2.ctap2 import Ctap2
        spec = json.loads(sys.argv[1])
        info = bytes.fromhex(sys.argv[2]); reply = bytes.fromhex(sys.argv[3])
        class Device:
            capabilities = 0x04
            sent = []
            def call(self, cmd, data=b"", event=None, on_keepalive=None):
                self.sent.append(bytes(data))
                return b"\\x00" + (info if data[:1] == b"\\x04" else reply)
        def unhex(v):
            if isinstance(v, dict):
                return {k: (bytes.fromhex(x[4:]) if isinstance(x, str) and x.startswith("hex:") else unhex(x)) for k, x in v.items()}
            if isinstance(v, list):
                return [unhex(x) for x in v]
            if isinstance(v, str) and v.startswith("hex:"):
                return bytes.fromhex(v[4:])
            return v
        a = unhex(spec["args"])
        dev = Device()
        ctap = Ctap2(dev)
        getattr(ctap, spec["method"])(*a)
        print(dev.sent[-1].hex())
        """

    static func pythonBytes(method: String, args: [Any], reply: String) async throws -> [UInt8] {
        let spec = try JSONSerialization.data(withJSONObject: ["method": method, "args": args])
        let info = try #require(Vectors.python("test_ctap2/module/_INFO")).bytes
        let replyBytes = try #require(Vectors.python(reply)).bytes
        let out = try await runPython(
            captureScript, [String(decoding: spec, as: UTF8.self), hexString(info), hexString(replyBytes)])
        return try #require(hexBytes(out))
    }

    @Test func makeCredentialEncodesLikePythonFIDO2() async throws {
        let hash = try #require(
            Vectors.python("test_attestation/TestAttestationObject.test_packed_attestation/client_param")
        ).bytes
        let credID = try #require(Vectors.python("test_ctap2/module/_CRED_ID")).bytes
        let request = MakeCredentialRequest(
            clientDataHash: hash, rp: RelyingPartyEntity(id: "example.com", name: "Example"),
            user: UserEntity(id: [0x75, 0x73, 0x65, 0x72], name: "user", displayName: "User Name"),
            pubKeyCredParams: [.init(algorithm: .es256), .init(algorithm: .edDSA), .init(algorithm: .rs256)],
            excludeList: [PublicKeyCredentialDescriptor(id: credID, transports: ["usb", "nfc"])],
            extensions: ["hmac-secret": true, "credProtect": 2],
            options: CommandOptions(residentKey: true, userVerification: false),
            pinUVAuthParam: [UInt8](repeating: 0xA5, count: 32), pinUVAuthProtocol: 2,
            enterpriseAttestation: 1)
        let args: [Any] = [
            "hex:" + hexString(hash), ["id": "example.com", "name": "Example"],
            ["id": "hex:75736572", "name": "user", "displayName": "User Name"],
            [
                ["type": "public-key", "alg": -7], ["type": "public-key", "alg": -8],
                ["type": "public-key", "alg": -257],
            ],
            [["type": "public-key", "id": "hex:" + hexString(credID), "transports": ["usb", "nfc"]]],
            ["hmac-secret": true, "credProtect": 2], ["rk": true, "uv": false],
            "hex:" + String(repeating: "a5", count: 32), 2, 1,
        ]
        let expected = try await Self.pythonBytes(
            method: "make_credential", args: args, reply: "test_ctap2/module/_MC_RESP")
        #expect(try request.encoded() == expected)
    }

    @Test func minimalMakeCredentialEncodesLikePythonFIDO2() async throws {
        let hash = [UInt8](repeating: 0x11, count: 32)
        let request = MakeCredentialRequest(
            clientDataHash: hash, rp: RelyingPartyEntity(id: "a.example"), user: UserEntity(id: [0]),
            pubKeyCredParams: [.init(algorithm: .es256)])
        let args: [Any] = [
            "hex:" + hexString(hash), ["id": "a.example"], ["id": "hex:00"],
            [["type": "public-key", "alg": -7]],
        ]
        let expected = try await Self.pythonBytes(
            method: "make_credential", args: args, reply: "test_ctap2/module/_MC_RESP")
        #expect(try request.encoded() == expected)
    }

    @Test func getAssertionEncodesLikePythonFIDO2() async throws {
        let hash = try #require(
            Vectors.python("test_attestation/TestAttestationObject.test_fido_u2f_attestation/client_param")
        ).bytes
        let credID = try #require(Vectors.python("test_ctap2/module/_CRED_ID")).bytes
        let request = GetAssertionRequest(
            rpID: "example.com", clientDataHash: hash,
            allowList: [
                PublicKeyCredentialDescriptor(id: credID), PublicKeyCredentialDescriptor(id: [1, 2, 3]),
            ],
            extensions: ["largeBlobKey": true],
            options: CommandOptions(userPresence: false, userVerification: true),
            pinUVAuthParam: [UInt8](repeating: 0x5A, count: 16), pinUVAuthProtocol: 1)
        let args: [Any] = [
            "example.com", "hex:" + hexString(hash),
            [
                ["type": "public-key", "id": "hex:" + hexString(credID)],
                ["type": "public-key", "id": "hex:010203"],
            ],
            ["largeBlobKey": true], ["up": false, "uv": true], "hex:" + String(repeating: "5a", count: 16), 1,
        ]
        let expected = try await Self.pythonBytes(
            method: "get_assertion", args: args, reply: "test_ctap2/module/_GA_RESP")
        #expect(try request.encoded() == expected)
    }

    @Test func statusCodesMatchPythonFIDO2() async throws {
        let out = try await runPython(
            """
            from fido2.ctap import CtapError
            for e in CtapError.ERR: print(e.value, e.name)
            """)
        let rows = out.split(separator: "\n").map { $0.split(separator: " ") }
        #expect(rows.count > 40)
        for row in rows {
            let value = try #require(UInt8(String(row[0])))
            let name = String(row[1])
            let status = CTAPStatus(rawValue: value)
            if value == 0 {
                #expect(status == .ok)
                #expect(status.name == "CTAP2_OK")
            } else {
                #expect(
                    status.name.hasSuffix("_" + name),
                    "0x\(String(value, radix: 16)) is \(name) in python-fido2")
            }
            #expect(!status.message.contains("unknown"))
        }
    }
}
