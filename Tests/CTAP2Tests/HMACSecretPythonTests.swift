import CBOR
import Crypto
import Foundation
import Testing
import VectorFiles

@testable import CTAP2

/// hmac-secret salt encryption and output decryption against python-fido2 2.2.1's
/// `HmacSecretExtension` (its `hmacGetSecret` path): both sides use the same platform and
/// authenticator key-agreement keys and the same protocol-two IV, so the encrypted salts and
/// saltAuth must match byte for byte; python-fido2 then encrypts outputs as an authenticator
/// would and both sides must decrypt them to the same secrets.
@Suite struct HMACSecretPythonTests {
    struct Scenario: Sendable, CustomTestStringConvertible {
        var version: Int
        var salts: Int
        var testDescription: String { "protocol \(version), \(salts) salt(s)" }
    }

    static let scenarios = [1, 2].flatMap { v in [1, 2].map { Scenario(version: v, salts: $0) } }
    static let salt1 = (0..<32).map { UInt8($0 &* 7 &+ 3) }
    static let salt2 = (0..<32).map { UInt8(255 - $0) }

    static let harness = #"""
        import json, sys, types, hashlib
        from fido2.ctap2.extensions import HmacSecretExtension
        from fido2.ctap2.pin import PinProtocolV1, PinProtocolV2
        import fido2.ctap2.pin as pinmod
        from cryptography.hazmat.primitives.asymmetric import ec

        cfg = json.loads(sys.argv[1])
        platform = ec.derive_private_key(int(cfg["platform"], 16), ec.SECP256R1())
        device_key = ec.derive_private_key(int(cfg["device"], 16), ec.SECP256R1())
        iv = bytes.fromhex(cfg["iv"])
        pinmod.ec = types.SimpleNamespace(
            generate_private_key=lambda *a, **k: platform, SECP256R1=ec.SECP256R1, ECDH=ec.ECDH,
            EllipticCurvePublicNumbers=ec.EllipticCurvePublicNumbers)
        pinmod.os = types.SimpleNamespace(urandom=lambda n: iv[:n])

        def i2b(v): return v.to_bytes(32, "big")

        class Ctap:
            def __init__(self):
                self.info = types.SimpleNamespace(extensions=["hmac-secret"], options={"clientPin": False})
            def client_pin(self, version, sub, **kw):
                n = device_key.public_key().public_numbers()
                return {1: {1: 2, 3: -25, -1: 1, -2: i2b(n.x), -3: i2b(n.y)}}

        out = {}
        for version in (1, 2):
            for count in (1, 2):
                proto = PinProtocolV2() if version == 2 else PinProtocolV1()
                salts = {"salt1": bytes.fromhex(cfg["salt1"])}
                if count == 2: salts["salt2"] = bytes.fromhex(cfg["salt2"])
                options = types.SimpleNamespace(extensions={"hmacGetSecret": salts}, allow_credentials=None)
                processor = HmacSecretExtension(allow_hmac_secret=True).get_assertion(Ctap(), options, proto)
                inputs = processor.prepare_inputs(None, None)["hmac-secret"]
                # The authenticator's side: its own ECDH with the platform key it was sent.
                k = inputs[1]
                peer = ec.EllipticCurvePublicNumbers(int.from_bytes(k[-2], "big"), int.from_bytes(k[-3], "big"),
                                                      ec.SECP256R1()).public_key()
                shared = proto.kdf(device_key.exchange(ec.ECDH(), peer))
                secrets = hashlib.sha512(b"outputs").digest()[: 32 * count]
                encrypted = proto.encrypt(shared, secrets)
                response = types.SimpleNamespace(auth_data=types.SimpleNamespace(extensions={"hmac-secret": encrypted}))
                result = processor.prepare_outputs(response, None)["hmacGetSecret"]
                out["%d-%d" % (version, count)] = {
                    "x": k[-2].hex(), "y": k[-3].hex(), "saltEnc": inputs[2].hex(), "saltAuth": inputs[3].hex(),
                    "protocol": str(inputs.get(4)), "encrypted": encrypted.hex(),
                    "output1": result.output1.hex(), "output2": result.output2.hex() if result.output2 else "",
                }
        print(json.dumps(out))
        """#

    static let python = Task<Result<[String: [String: String]], PythonUnavailable>, Never> {
        let config: [String: String] = [
            "platform": ClientPINPythonTests.platformScalar,
            "device": hexString(ClientPINTestsAuthenticator.deviceScalar),
            "iv": hexString(ClientPINPythonTests.iv), "salt1": hexString(salt1), "salt2": hexString(salt2),
        ]
        do {
            let data = try JSONSerialization.data(withJSONObject: config)
            let output = try await runPython(harness, [String(decoding: data, as: UTF8.self)])
            guard let decoded = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: [String: String]]
            else { return .failure(PythonUnavailable("python-fido2 printed no JSON object")) }
            return .success(decoded)
        } catch let error as PythonUnavailable {
            return .failure(error)
        } catch {
            return .failure(PythonUnavailable("\(error)"))
        }
    }

    /// The shared secret this library derives with the same fixed keys python-fido2 uses.
    static func sharedSecret(version: Int) throws -> PINUVSharedSecret {
        let proto: any PINUVAuthProtocol =
            version == 2 ? ClientPINPythonTests.FixedIVProtocolTwo() : PINUVAuthProtocolOne()
        let platformKey = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: try #require(hexBytes(ClientPINPythonTests.platformScalar)))
        let device = try P256.KeyAgreement.PrivateKey(rawRepresentation: ClientPINTestsAuthenticator.deviceScalar)
        let point = Array(device.publicKey.x963Representation)
        let result = try proto.encapsulate(
            peerX: Array(point[1..<33]), peerY: Array(point[33..<65]), using: platformKey)
        return PINUVSharedSecret(
            pinUVAuthProtocol: proto, platformKeyAgreement: PINUVSharedSecret.coseKey(x: result.x, y: result.y),
            secret: result.sharedSecret)
    }

    @Test(arguments: scenarios)
    func saltsAndOutputsMatchPythonFIDO2(_ scenario: Scenario) async throws {
        let expected = try #require(try await Self.python.value.get()["\(scenario.version)-\(scenario.salts)"])
        let secret = try Self.sharedSecret(version: scenario.version)
        let input = try HMACSecretInput(
            salt1: Self.salt1, salt2: scenario.salts == 2 ? Self.salt2 : nil, sharedSecret: secret)
        let map = input.cbor
        let keyAgreement = try #require(map[HMACSecretInput.Key.keyAgreement]?.mapValue)
        #expect(keyAgreement[COSEKey.Label.x]?.bytesValue.map(hexString) == expected["x"])
        #expect(keyAgreement[COSEKey.Label.y]?.bytesValue.map(hexString) == expected["y"])
        #expect(map[HMACSecretInput.Key.saltEncrypted]?.bytesValue.map(hexString) == expected["saltEnc"])
        #expect(
            map[HMACSecretInput.Key.saltAuthentication]?.bytesValue.map(hexString) == expected["saltAuth"])
        // python-fido2 always names the protocol; this library leaves out protocol one, its default.
        #expect(expected["protocol"] == String(scenario.version))
        #expect(map[HMACSecretInput.Key.pinUVAuthProtocol]?.intValue == (scenario.version == 1 ? nil : 2))

        let encrypted = try #require(expected["encrypted"].flatMap(hexBytes))
        let output = try HMACSecretOutput(encrypted: encrypted, input: input, sharedSecret: secret)
        #expect(hexString(output.output1) == expected["output1"])
        #expect((output.output2.map(hexString) ?? "") == expected["output2"])
    }

    /// An output of the wrong length for the salts sent is refused, not truncated or padded.
    @Test(arguments: [1, 2])
    func outputLengthIsChecked(version: Int) throws {
        let secret = try Self.sharedSecret(version: version)
        let one = try HMACSecretInput(salt1: Self.salt1, sharedSecret: secret)
        let sixtyFour = try secret.encrypt([UInt8](repeating: 0x42, count: 64))
        #expect(throws: CTAP2Error.self) {
            try HMACSecretOutput(encrypted: sixtyFour, input: one, sharedSecret: secret)
        }
        #expect(throws: CTAP2Error.self) {
            try HMACSecretOutput(encrypted: Array(sixtyFour.dropLast(16)) + [1], input: one, sharedSecret: secret)
        }
        #expect(throws: CTAP2Error.self) {
            try HMACSecretInput(salt1: Array(Self.salt1.prefix(16)), sharedSecret: secret)
        }
    }

    /// Secrets never reach descriptions or reflection.
    @Test func outputsAreRedacted() throws {
        let output = try HMACSecretOutput(decrypted: Self.salt1 + Self.salt2, saltCount: 2)
        for text in [String(describing: output), String(reflecting: output), "\(Mirror(reflecting: output).children.count)"]
        {
            #expect(!text.contains(hexString(Array(Self.salt1.prefix(4)))))
            #expect(!text.contains("\(Self.salt1[0]), \(Self.salt1[1])"))
        }
        #expect(Mirror(reflecting: output).children.isEmpty)
    }
}
