import CBOR
import Crypto
import Foundation
import VectorFiles
import Testing

@testable import CTAP2

/// Each clientPIN subcommand's request bytes against what python-fido2 2.2.1's `ClientPin`
/// sends for the same inputs: both sides use the same fixed platform key, authenticator key
/// and protocol-two IV, so every byte (including ciphertexts and pinUvAuthParams) must match.
@Suite struct ClientPINPythonTests {
    struct Scenario: Sendable, CustomTestStringConvertible {
        var name: String
        var version: Int
        var options: [String: Bool]
        var op: String
        var pin: String? = nil
        var newPIN: String? = nil
        var permissions: UInt8? = nil
        var rpID: String? = nil
        var devicePIN: String? = nil
        var testDescription: String { name }

        var json: [String: Any] {
            var out: [String: Any] = ["name": name, "protocol": version, "options": options, "op": op]
            if let pin { out["pin"] = pin }
            if let newPIN { out["newPIN"] = newPIN }
            if let permissions { out["permissions"] = Int(permissions) }
            if let rpID { out["rpID"] = rpID }
            return out
        }
    }

    static let full: [String: Bool] = ["clientPin": true, "pinUvAuthToken": true, "uv": true]
    static let legacy: [String: Bool] = ["clientPin": true]

    static let scenarios: [Scenario] = [1, 2].flatMap { v -> [Scenario] in
        [
            Scenario(name: "v\(v) getPINRetries", version: v, options: legacy, op: "pinRetries"),
            Scenario(name: "v\(v) getUVRetries", version: v, options: full, op: "uvRetries"),
            Scenario(name: "v\(v) setPIN", version: v, options: legacy, op: "setPIN", pin: "1234"),
            Scenario(
                name: "v\(v) setPIN non-ASCII", version: v, options: legacy, op: "setPIN", pin: "Grüße-π-€"),
            Scenario(
                name: "v\(v) changePIN", version: v, options: legacy, op: "changePIN", pin: "1234",
                newPIN: "98765432", devicePIN: "1234"),
            Scenario(
                name: "v\(v) getPinToken", version: v, options: legacy, op: "pinToken", pin: "1234",
                permissions: 0x03, devicePIN: "1234"),
            Scenario(
                name: "v\(v) token with PIN, mc+ga, rpId", version: v, options: full, op: "pinToken",
                pin: "1234",
                permissions: 0x03, rpID: "example.com", devicePIN: "1234"),
            Scenario(
                name: "v\(v) token with PIN, cm+be+lbw+acfg", version: v, options: full, op: "pinToken",
                pin: "1234", permissions: 0x3C, devicePIN: "1234"),
            Scenario(
                name: "v\(v) token with UV, ga, rpId", version: v, options: full, op: "uvToken",
                permissions: 0x02,
                rpID: "example.com"),
        ]
    }

    static let platformScalar = "7452e599fee739d8a653f6a507343d12d382249108a651402520b72f24fe7684"
    static let iv = (0..<16).map { UInt8($0) }
    static let clientDataHash = (100..<132).map { UInt8($0) }

    struct Expected: Sendable {
        var requests: [[UInt8]]
        var token: [UInt8]?
        var param: [UInt8]?
    }

    /// python-fido2's view of every scenario, computed once.
    static let python = Task<Result<[String: Expected], PythonUnavailable>, Never> {
        let config: [String: Any] = [
            "platform": platformScalar, "device": hexString(ClientPINTestsAuthenticator.deviceScalar),
            "iv": hexString(iv), "token": hexString(ClientPINTestsAuthenticator.token),
            "clientDataHash": hexString(clientDataHash), "scenarios": scenarios.map(\.json),
        ]
        do {
            let data = try JSONSerialization.data(withJSONObject: config)
            let output = try await runPython(harness, [String(decoding: data, as: UTF8.self)])
            guard
                let decoded = try JSONSerialization.jsonObject(with: Data(output.utf8))
                    as? [String: [String: Any]]
            else { return .failure(PythonUnavailable("python-fido2 printed no JSON object")) }
            var out: [String: Expected] = [:]
            for (name, entry) in decoded {
                let requests = (entry["requests"] as? [String] ?? []).compactMap(hexBytes)
                out[name] = Expected(
                    requests: requests, token: (entry["token"] as? String).flatMap(hexBytes),
                    param: (entry["param"] as? String).flatMap(hexBytes))
            }
            return .success(out)
        } catch let error as PythonUnavailable {
            return .failure(error)
        } catch {
            return .failure(PythonUnavailable("\(error)"))
        }
    }

    /// Protocol two with the IV python-fido2 is made to use.
    struct FixedIVProtocolTwo: PINUVAuthProtocol {
        let base = PINUVAuthProtocolTwo()
        var version: Int { 2 }
        func kdf(_ z: [UInt8]) -> [UInt8] { base.kdf(z) }
        func encrypt(key: [UInt8], _ plaintext: [UInt8]) throws(CTAP2Error) -> [UInt8] {
            try base.encrypt(key: key, plaintext, iv: ClientPINPythonTests.iv)
        }
        func decrypt(key: [UInt8], _ ciphertext: [UInt8]) throws(CTAP2Error) -> [UInt8] {
            try base.decrypt(key: key, ciphertext)
        }
        func authenticate(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
            base.authenticate(key: key, message)
        }
    }

    @Test(arguments: scenarios)
    func requestBytesMatchPythonFIDO2(_ scenario: Scenario) async throws {
        let expected = try #require(
            try await Self.python.value.get()[scenario.name], "python-fido2 ran no \(scenario.name)")
        let fake = try ClientPINTestsAuthenticator(pin: scenario.devicePIN) { $0.uvSucceeds = true }
        var options = CBORMap()
        for (key, value) in scenario.options { options[key] = .boolean(value) }
        let info = try clientPINInfo(protocols: [scenario.version], options: options)
        let proto: any PINUVAuthProtocol =
            scenario.version == 2 ? FixedIVProtocolTwo() : PINUVAuthProtocolOne()
        var client = try ClientPIN(
            session: CTAP2Session(connection: fake), info: info, pinUVAuthProtocol: proto)
        let platformKey = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: try #require(hexBytes(Self.platformScalar)))
        client.makeEphemeralKey = { platformKey }
        let permissions = PINUVAuthTokenPermissions(rawValue: scenario.permissions ?? 0)
        var token: PINUVAuthToken?
        switch scenario.op {
        case "pinRetries": _ = try await client.pinRetries()
        case "uvRetries": _ = try await client.uvRetries()
        case "setPIN": try await client.setPIN(try #require(scenario.pin))
        case "changePIN":
            try await client.changePIN(from: try #require(scenario.pin), to: try #require(scenario.newPIN))
        case "pinToken":
            token = try await client.pinUVAuthToken(
                pin: try #require(scenario.pin), permissions: permissions, rpID: scenario.rpID)
        case "uvToken": token = try await client.uvAuthToken(permissions: permissions, rpID: scenario.rpID)
        default: Issue.record("unknown scenario \(scenario.op)")
        }
        #expect(fake.requests.map(hexString) == expected.requests.map(hexString))
        if let token {
            let message = try MakeCredentialRequest.clientDataHashMessage(Self.clientDataHash)
            #expect(try token.authenticate(message) == expected.param)
            #expect(expected.token == ClientPINTestsAuthenticator.token)
        } else {
            #expect(expected.token == nil)
        }
    }

    static let harness = #"""
        import json, sys, types
        from fido2 import cbor
        from fido2.ctap import CtapError
        from fido2.ctap2 import Ctap2
        from fido2.ctap2.pin import ClientPin, PinProtocolV1, PinProtocolV2
        import fido2.ctap2.pin as pinmod
        from cryptography.hazmat.primitives.asymmetric import ec

        cfg = json.loads(sys.argv[1])
        platform = ec.derive_private_key(int(cfg["platform"], 16), ec.SECP256R1())
        device_key = ec.derive_private_key(int(cfg["device"], 16), ec.SECP256R1())
        iv = bytes.fromhex(cfg["iv"])
        token = bytes.fromhex(cfg["token"])
        cdh = bytes.fromhex(cfg["clientDataHash"])
        pinmod.ec = types.SimpleNamespace(
            generate_private_key=lambda *a, **k: platform, SECP256R1=ec.SECP256R1, ECDH=ec.ECDH,
            EllipticCurvePublicNumbers=ec.EllipticCurvePublicNumbers)
        pinmod.os = types.SimpleNamespace(urandom=lambda n: iv[:n])

        def i2b(v): return v.to_bytes(32, "big")

        class Device:
            capabilities = 0x04
            def __init__(self, version, options):
                self.version, self.options, self.requests = version, options, []
            def call(self, cmd, data, event=None, on_keepalive=None):
                if data[0] == 0x04:
                    return b"\0" + cbor.encode({1: ["FIDO_2_0", "FIDO_2_1"], 3: b"\0" * 16, 4: self.options,
                                                6: [self.version]})
                self.requests.append(data.hex())
                req = cbor.decode(data[1:])
                sub = req[2]
                proto = PinProtocolV2() if req.get(1) == 2 else PinProtocolV1()
                if sub == 1: out = {3: 8, 4: False}
                elif sub == 7: out = {5: 5}
                elif sub == 2:
                    n = device_key.public_key().public_numbers()
                    out = {1: {1: 2, 3: -25, -1: 1, -2: i2b(n.x), -3: i2b(n.y)}}
                elif sub in (3, 4): out = None
                else:
                    k = req[3]
                    peer = ec.EllipticCurvePublicNumbers(int.from_bytes(k[-2], "big"), int.from_bytes(k[-3], "big"),
                                                          ec.SECP256R1()).public_key()
                    shared = proto.kdf(device_key.exchange(ec.ECDH(), peer))
                    out = {2: proto.encrypt(shared, token)}
                return b"\0" + (cbor.encode(out) if out is not None else b"")

        results = {}
        for sc in cfg["scenarios"]:
            dev = Device(sc["protocol"], sc["options"])
            ctap = Ctap2(dev)
            cp = ClientPin(ctap)
            got = None
            op = sc["op"]
            perms = ClientPin.PERMISSION(sc["permissions"]) if sc.get("permissions") is not None else None
            if op == "pinRetries": got = cp.get_pin_retries()[0]
            elif op == "uvRetries": got = cp.get_uv_retries()
            elif op == "setPIN": cp.set_pin(sc["pin"])
            elif op == "changePIN": cp.change_pin(sc["pin"], sc["newPIN"])
            elif op == "pinToken": got = cp.get_pin_token(sc["pin"], perms, sc.get("rpID"))
            elif op == "uvToken": got = cp.get_uv_token(perms, sc.get("rpID"))
            entry = {"requests": dev.requests}
            if isinstance(got, bytes):
                entry["token"] = got.hex()
                entry["param"] = cp.protocol.authenticate(got, cdh).hex()
            results[sc["name"]] = entry
        print(json.dumps(results))
        """#

    /// The pinUvAuthParam of credentialManagement, authenticatorConfig, largeBlobs and
    /// bioEnrollment requests that python-fido2 builds with the same token: each command's own
    /// message layout (CTAP 2.1 §6.7, §6.8, §6.10.2, §6.11).
    @Test(arguments: [1, 2])
    func commandParamsMatchPythonFIDO2(version: Int) async throws {
        let output = try await runPython(
            Self.commandHarness, [#"{"token": ""# + hexString(ClientPINTestsAuthenticator.token) + #""}"#])
        let decoded = try #require(
            try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: [String]])
        let requests = try #require(decoded[String(version)]).compactMap(hexBytes)
        try #require(requests.count == 6)
        let proto: any PINUVAuthProtocol = version == 2 ? PINUVAuthProtocolTwo() : PINUVAuthProtocolOne()
        let token = PINUVAuthToken(
            token: ClientPINTestsAuthenticator.token, pinUVAuthProtocol: proto,
            permissions: [
                .credentialManagement, .authenticatorConfiguration, .largeBlobWrite, .bioEnrollment,
            ],
            rpID: nil)
        var commands: [UInt8] = []
        for request in requests {
            let map = try #require(try CBORDecoder().decode(Array(request.dropFirst())).mapValue)
            let command = try #require(request.first)
            commands.append(command)
            let ours: [UInt8]
            let theirs: [UInt8]?
            switch command {
            case 0x0A:
                let message = CredentialManagementRequest.pinUVAuthMessage(
                    subCommand: UInt8(try #require(map[1]?.uint64Value)), parameters: map[2]?.mapValue)
                ours = try token.pinUVAuthParam(for: CredentialManagementRequest.self) { message }
                theirs = map[4]?.bytesValue
                #expect(map[3]?.uint64Value == UInt64(version))
            case 0x0D:
                let message = AuthenticatorConfigRequest.pinUVAuthMessage(
                    subCommand: UInt8(try #require(map[1]?.uint64Value)), parameters: map[2]?.mapValue)
                ours = try token.pinUVAuthParam(for: AuthenticatorConfigRequest.self) { message }
                theirs = map[4]?.bytesValue
                #expect(map[3]?.uint64Value == UInt64(version))
            case 0x0C:
                let message = LargeBlobsRequest.pinUVAuthMessage(
                    offset: UInt32(try #require(map[3]?.uint64Value)),
                    fragment: try #require(map[2]?.bytesValue))
                ours = try token.pinUVAuthParam(for: LargeBlobsRequest.self) { message }
                theirs = map[5]?.bytesValue
                #expect(map[6]?.uint64Value == UInt64(version))
            case 0x09:
                let message = BioEnrollmentRequest.pinUVAuthMessage(
                    modality: UInt8(try #require(map[1]?.uint64Value)),
                    subCommand: UInt8(try #require(map[2]?.uint64Value)),
                    parameters: map[3]?.mapValue)
                ours = try token.pinUVAuthParam(for: BioEnrollmentRequest.self) { message }
                theirs = map[5]?.bytesValue
                #expect(map[4]?.uint64Value == UInt64(version))
            default:
                Issue.record("unexpected command \(command)")
                continue
            }
            #expect(ours == theirs, "command 0x\(String(command, radix: 16))")
        }
        #expect(commands == [0x0A, 0x0A, 0x0D, 0x0D, 0x0C, 0x09])
    }

    static let commandHarness = #"""
        import json, sys
        from fido2 import cbor
        from fido2.ctap2 import Ctap2
        from fido2.ctap2.pin import PinProtocolV1, PinProtocolV2
        from fido2.ctap2.credman import CredentialManagement
        from fido2.ctap2.config import Config
        from fido2.ctap2.blob import LargeBlobs
        from fido2.ctap2.bio import FPBioEnrollment

        cfg = json.loads(sys.argv[1])
        token = bytes.fromhex(cfg["token"])

        class Device:
            capabilities = 0x04
            def __init__(self, version):
                self.version, self.requests = version, []
            def call(self, cmd, data, event=None, on_keepalive=None):
                if data[0] == 0x04:
                    return b"\0" + cbor.encode({1: ["FIDO_2_1"], 3: b"\0" * 16, 5: 2048, 6: [self.version], 0x0B: 1024,
                        4: {"clientPin": True, "pinUvAuthToken": True, "credMgmt": True, "authnrCfg": True,
                            "largeBlobs": True, "bioEnroll": True, "setMinPINLength": True, "alwaysUv": False}})
                if data[0] == 0x09 and cbor.decode(data[1:]).get(6):
                    return b"\0" + cbor.encode({1: 1})
                self.requests.append(data.hex())
                return b"\0"

        out = {}
        for v, proto in ((1, PinProtocolV1), (2, PinProtocolV2)):
            dev = Device(v)
            ctap = Ctap2(dev)
            CredentialManagement(ctap, proto(), token).get_metadata()
            CredentialManagement(ctap, proto(), token).delete_cred({"type": "public-key", "id": bytes(range(16))})
            Config(ctap, proto(), token).toggle_always_uv()
            Config(ctap, proto(), token).set_min_pin_length(min_pin_length=8, rp_ids=["example.com"])
            LargeBlobs(ctap, proto(), token).write_blob_array([{1: b"\1" * 20, 2: b"\2" * 12, 3: 9}])
            FPBioEnrollment(ctap, proto(), token).remove_enrollment(b"\7\7")
            out[str(v)] = dev.requests
        print(json.dumps(out))
        """#
}
