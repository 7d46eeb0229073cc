import CTAP2
import Crypto
import Foundation
import VectorFiles
import Testing

/// PIN/UV auth protocol one against python-fido2's recorded bytes (tests/test_ctap2.py,
/// TestClientPin), and protocol two against python-fido2's own implementation.
struct PINUVAuthProtocolTests {
    private struct Entry: Decodable { var id: String; var hex: String? }

    private static let vectors: [String: [UInt8]] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Vectors/python-fido2-vectors.json")
        guard let data = try? Data(contentsOf: url),
            let entries = try? JSONDecoder().decode([Entry].self, from: data)
        else { return [:] }
        var out: [String: [UInt8]] = [:]
        for entry in entries where entry.id.hasPrefix("python-fido2/test_ctap2/") {
            out[entry.id.replacingOccurrences(of: "python-fido2/test_ctap2/", with: "")] = hexBytes(
                entry.hex ?? "")
        }
        return out
    }()

    private static func hexBytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), next > index,
            let byte = UInt8(hex[index..<next], radix: 16)
        {
            out.append(byte)
            index = next
        }
        return out
    }

    private func vector(_ name: String) throws -> [UInt8] {
        try #require(
            Self.vectors[name], "vector \(name) missing from Tests/Vectors/python-fido2-vectors.json")
    }

    /// python-fido2's platform key for these tests (the integer EC_PRIV in test_ctap2.py); the
    /// test checks that it yields the recorded EC_PUB_X / EC_PUB_Y before trusting it.
    private static let platformScalar = hexBytes(
        "7452e599fee739d8a653f6a507343d12d382249108a651402520b72f24fe7684")

    @Test func protocolOneSharedSecretMatchesRecording() throws {
        let key = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.platformScalar)
        let result = try PINUVAuthProtocolOne().encapsulate(
            peerX: try vector("module/DEV_PUB_X"), peerY: try vector("module/DEV_PUB_Y"), using: key)
        #expect(result.x == (try vector("module/EC_PUB_X")))
        #expect(result.y == (try vector("module/EC_PUB_Y")))
        #expect(result.sharedSecret == (try vector("module/SHARED")))
    }

    @Test func protocolOneTokenAndPINHash() throws {
        let shared = try vector("module/SHARED")
        let v1 = PINUVAuthProtocolOne()
        #expect(try v1.decrypt(key: shared, try vector("module/TOKEN_ENC")) == (try vector("module/TOKEN")))
        let pinHash = Array(SHA256.hash(data: Array("1234".utf8)).prefix(16))
        #expect(try v1.encrypt(key: shared, pinHash) == (try vector("module/PIN_HASH_ENC")))
    }

    private func padded(_ pin: String) -> [UInt8] {
        Array(pin.utf8) + [UInt8](repeating: 0, count: 64 - pin.utf8.count)
    }

    @Test func protocolOneSetPIN() throws {
        let shared = try vector("module/SHARED")
        let v1 = PINUVAuthProtocolOne()
        let newPINEnc = try v1.encrypt(key: shared, padded("1234"))
        #expect(newPINEnc == (try vector("TestClientPin.test_set_pin/kw:new_pin_enc")))
        #expect(
            v1.authenticate(key: shared, newPINEnc)
                == (try vector("TestClientPin.test_set_pin/kw:pin_uv_param")))
    }

    @Test func protocolOneChangePIN() throws {
        let shared = try vector("module/SHARED")
        let v1 = PINUVAuthProtocolOne()
        let newPINEnc = try v1.encrypt(key: shared, padded("4321"))
        let pinHashEnc = try v1.encrypt(key: shared, Array(SHA256.hash(data: Array("1234".utf8)).prefix(16)))
        #expect(newPINEnc == (try vector("TestClientPin.test_change_pin/kw:new_pin_enc")))
        #expect(pinHashEnc == (try vector("TestClientPin.test_change_pin/kw:pin_hash_enc")))
        let param = v1.authenticate(key: shared, newPINEnc + pinHashEnc)
        #expect(param == (try vector("TestClientPin.test_change_pin/kw:pin_uv_param")))
        #expect(v1.verify(key: shared, newPINEnc + pinHashEnc, signature: param))
        #expect(!v1.verify(key: shared, newPINEnc, signature: param))
    }

    @Test func rejectsBadInput() {
        let errors = [
            #expect(throws: CTAP2Error.self) {
                try PINUVAuthProtocolOne().encrypt(key: [UInt8](repeating: 0, count: 32), [1, 2, 3])
            },
            #expect(throws: CTAP2Error.self) {
                try PINUVAuthProtocolTwo().decrypt(key: [UInt8](repeating: 0, count: 64), [1, 2])
            },
            #expect(throws: CTAP2Error.self) {
                try PINUVAuthProtocolOne().encapsulate(
                    peerX: [UInt8](repeating: 1, count: 32), peerY: [UInt8](repeating: 2, count: 32))
            },
        ]
        #expect(errors.allSatisfy { $0?.code == .pinUVAuthProtocol })
    }

    /// Protocol two has no recorded vectors, so python-fido2's PinProtocolV2 computes the
    /// expected values from the same inputs in a separate process.
    @Test func protocolTwoAgreesWithPythonFIDO2() async throws {
        let z = (0..<32).map { UInt8($0 &* 7 &+ 3) }
        let message = Array("pinUvAuthParam message".utf8)
        let token = (0..<32).map { UInt8(255 - $0) }
        let plaintext = (0..<32).map { UInt8($0) }
        let v2 = PINUVAuthProtocolTwo()
        let shared = v2.kdf(z)
        let ours = try v2.encrypt(key: shared, plaintext)
        let hex = { (b: [UInt8]) in b.map { String(format: "%02x", $0) }.joined() }
        let script = """
            from fido2.ctap2.pin import PinProtocolV2
            p = PinProtocolV2()
            z = bytes.fromhex("\(hex(z))"); s = p.kdf(z)
            print(s.hex())
            print(p.authenticate(s, bytes.fromhex("\(hex(message))")).hex())
            print(p.authenticate(bytes.fromhex("\(hex(token))"), bytes.fromhex("\(hex(message))")).hex())
            print(p.decrypt(s, bytes.fromhex("\(hex(ours))")).hex())
            print(p.encrypt(s, bytes.fromhex("\(hex(plaintext))")).hex())
            """
        let output = try await runPython(script)
        let lines = output.split(separator: "\n").map { Self.hexBytes(String($0)) }
        try #require(lines.count == 5)
        #expect(lines[0] == shared)
        #expect(lines[1] == v2.authenticate(key: shared, message))
        #expect(lines[2] == v2.authenticate(key: token, message))
        #expect(lines[3] == plaintext)
        #expect(try v2.decrypt(key: shared, lines[4]) == plaintext)
        #expect(lines[4].count == 48)
    }
}
