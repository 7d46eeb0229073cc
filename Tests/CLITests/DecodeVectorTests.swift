import Foundation
import Testing

/// One entry of Tests/Vectors/*.json (copies of ../shared/vectors).
struct Vector: Sendable, CustomTestStringConvertible {
    var id: String
    var kind: String
    var hex: String
    var notes: String
    /// decoded.authData, as the vector states it.
    var authData: [String: String]
    var flags: Int?
    var signCount: Int?
    var cborDiagnostic: String?
    var fmt: String?

    var testDescription: String { id }

    static func load(_ file: String) -> [Vector] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/\(file)")
        guard let data = try? Data(contentsOf: url),
            let entries = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { return [] }
        return entries.compactMap { e in
            guard let id = e["id"] as? String, let kind = e["kind"] as? String, let hex = e["hex"] as? String
            else {
                return nil
            }
            let decoded = e["decoded"] as? [String: Any] ?? [:]
            let auth = decoded["authData"] as? [String: Any] ?? [:]
            var strings: [String: String] = [:]
            for (k, v) in auth { if let s = v as? String { strings[k] = s } }
            return Vector(
                id: id, kind: kind, hex: hex, notes: e["notes"] as? String ?? "", authData: strings,
                flags: auth["flags"] as? Int, signCount: auth["signCount"] as? Int,
                cborDiagnostic: decoded["cbor_diag"] as? String, fmt: decoded["fmt"] as? String)
        }
    }

    static let all = load("webauthn-spec.json") + load("python-fido2-vectors.json")
    static let attestationObjects = all.filter { $0.kind == "attestationObject" }
    static let authenticatorData = all.filter { $0.kind == "authenticatorData" }
    static let ctap2Responses = all.filter { $0.kind == "ctap2-response-cbor" }
    static let getInfo = ctap2Responses.filter { $0.notes.contains("GetInfo") }
}

/// `securitykey decode` reproduces what the vectors state.
@Suite struct DecodeVectorTests {
    @Test func vectorsArePresent() {
        #expect(Vector.attestationObjects.count >= 10)
        #expect(Vector.authenticatorData.count >= 10)
        #expect(Vector.getInfo.count >= 2)
    }

    /// Checks decoded authenticator data JSON against the vector's decoded.authData.
    static func expectAuthData(_ json: [String: Any]?, _ vector: Vector) {
        guard let json else {
            Issue.record("no authData in the output for \(vector.id)")
            return
        }
        #expect(json["rpIdHash"] as? String == vector.authData["rpIdHash"])
        #expect(json["flags"] as? Int == vector.flags)
        #expect(json["signCount"] as? Int == vector.signCount)
        let attested = json["attestedCredentialData"] as? [String: Any]
        if let aaguid = vector.authData["aaguid"] {
            #expect(attested?["aaguid"] as? String == aaguid)
            // Credential IDs in base64url, as register and credentials print them.
            #expect(
                attested?["credentialId"] as? String
                    == vector.authData["credentialId"].flatMap(DecodeResponseTests.base64URL(hex:)))
            let key = attested?["credentialPublicKey"] as? [String: Any]
            #expect(key?["diagnostic"] as? String == vector.authData["credentialPublicKey_cose"])
        } else {
            #expect(attested == nil)
        }
    }

    @Test(arguments: Vector.authenticatorData)
    func authenticatorData(_ vector: Vector) throws {
        let result = try CLIRunner.run([
            "decode", "--as", "authenticator-data", "--hex", vector.hex, "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try result.object()
        #expect(json["kind"] as? String == "authenticator-data")
        Self.expectAuthData(json, vector)
    }

    @Test(arguments: Vector.attestationObjects)
    func attestationObject(_ vector: Vector) throws {
        // --as omitted: the attestation object is recognised.
        let result = try CLIRunner.run(["decode", "--hex", vector.hex, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try result.object()
        #expect(json["kind"] as? String == "attestation-object")
        #expect(json["fmt"] as? String == vector.fmt)
        #expect(json["diagnostic"] as? String == vector.cborDiagnostic)
        Self.expectAuthData(json["authData"] as? [String: Any], vector)
    }

    /// Whether a makeCredential reply `{1: fmt, 2: authData, ...}` writes authData's length
    /// (under 256) in two bytes, read byte by byte from the hex.
    static func hasLongAuthDataLength(_ hex: String) -> Bool {
        guard var bytes = DecodeResponseTests.bytes(hex: hex) else { return false }
        if bytes.first == 0x00 { bytes.removeFirst() }
        // a3 01 <text string of up to 23 bytes> 02 59 <2-byte length>
        guard bytes.count > 8, bytes[0] & 0xE0 == 0xA0, bytes[1] == 0x01, bytes[2] & 0xE0 == 0x60 else { return false }
        let fmtEnd = 3 + Int(bytes[2] & 0x1F)
        guard bytes.count > fmtEnd + 3, bytes[fmtEnd] == 0x02, bytes[fmtEnd + 1] == 0x59 else { return false }
        return bytes[fmtEnd + 2] == 0x00
    }

    @Test(arguments: Vector.ctap2Responses)
    func ctap2Response(_ vector: Vector) throws {
        let result = try CLIRunner.run(["decode", "--hex", vector.hex, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try result.object()
        #expect(json["diagnostic"] as? String == vector.cborDiagnostic)
        // A reply whose authData length is written in two bytes (0x59 00 NN) where one
        // suffices (0x58 NN) is not canonical (RFC 8949 §4.2.1): decode shows it and says so.
        #expect((json["canonical"] as? Bool ?? true) == !Self.hasLongAuthDataLength(vector.hex), "\(vector.id)")
        if vector.notes.contains("GetInfo") {
            #expect(json["kind"] as? String == "get-info")
        } else if !vector.authData.isEmpty {
            #expect(["make-credential-response", "get-assertion-response"].contains(json["kind"] as? String))
            Self.expectAuthData(json["authData"] as? [String: Any], vector)
        }
    }

    /// get-info's members against python-fido2's own parse of the same bytes.
    @Test(arguments: Vector.getInfo)
    func getInfoMatchesPythonFido2(_ vector: Vector) throws {
        guard let python = PythonFido2.interpreter() else { return }
        let script = """
            import json, sys
            from fido2 import cbor
            from fido2.ctap2 import Info
            info = Info.from_dict(cbor.decode(bytes.fromhex(sys.argv[1])))
            print(json.dumps({"versions": info.versions, "extensions": info.extensions,
                "aaguid": str(info.aaguid), "options": info.options, "maxMsgSize": info.max_msg_size,
                "pinUvAuthProtocols": info.pin_uv_protocols}))
            """
        let expected = try PythonFido2.runJSON(python, script, [vector.hex])
        let result = try CLIRunner.run(["decode", "--as", "get-info", "--hex", vector.hex, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try result.object()
        #expect(json["versions"] as? [String] == expected["versions"] as? [String])
        #expect((json["extensions"] as? [String] ?? []) == expected["extensions"] as? [String])
        #expect(json["aaguid"] as? String == expected["aaguid"] as? String)
        #expect(json["options"] as? [String: Bool] == expected["options"] as? [String: Bool])
        #expect(json["maxMsgSize"] as? Int == expected["maxMsgSize"] as? Int)
        #expect(json["pinUvAuthProtocols"] as? [Int] == expected["pinUvAuthProtocols"] as? [Int])
    }

    @Test(arguments: [
        ["decode", "--as", "attestation-object", "--hex", "a1"],
        ["decode", "--as", "authenticator-data", "--hex", "00112233"],
        ["decode", "--as", "cbor", "--hex", "1f"],
        ["decode", "--hex", "not hex"],
        ["decode", "--as", "ctaphid", "--hex", "0011"],
    ])
    func malformedInputExitsOneWithAReason(_ arguments: [String]) throws {
        let result = try CLIRunner.run(arguments + ["--json"])
        #expect(result.status == 1)
        let error = try result.object()["error"] as? [String: Any]
        #expect((error?["message"] as? String ?? "").isEmpty == false)
        #expect(!result.stderr.isEmpty)
    }

    @Test func usageErrorsExit64() throws {
        // Two inputs at once (with none, standard input is read).
        #expect(try CLIRunner.run(["decode", "--hex", "00", "--base64", "AA"]).status == 64)
        #expect(try CLIRunner.run(["decode", "--as", "nonsense", "--hex", "00"]).status == 64)
        #expect(try CLIRunner.run(["register", "--rp", "example.org"]).status == 64)
    }
}
