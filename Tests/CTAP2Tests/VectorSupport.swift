import CBOR
import Foundation
import VectorFiles
import TestProcesses
import Testing

@testable import CTAP2

/// What a vector's `decoded.authData` states about authenticator data.
struct ExpectedAuthData: Sendable {
    var rpIDHash: [UInt8]
    var flags: UInt8
    var signCount: UInt32
    var aaguid: String?
    var credentialID: [UInt8]?
    var coseDiagnostic: String?

    init?(_ json: Any?) {
        guard let d = json as? [String: Any],
            let rp = d["rpIdHash"] as? String, let rpBytes = hexBytes(rp),
            let flags = d["flags"] as? Int, let count = d["signCount"] as? Int
        else { return nil }
        rpIDHash = rpBytes
        self.flags = UInt8(flags)
        signCount = UInt32(count)
        aaguid = d["aaguid"] as? String
        credentialID = (d["credentialId"] as? String).flatMap(hexBytes)
        coseDiagnostic = d["credentialPublicKey_cose"] as? String
    }
}

/// One entry of Tests/Vectors/*.json, reduced to what these tests read.
struct Vector: Sendable, CustomTestStringConvertible, IdentifiedVector {
    var id: String
    var kind: String
    var bytes: [UInt8]
    var authData: ExpectedAuthData?
    var format: String?
    var cborDiagnostic: String?
    var x5cCount: Int?

    var testDescription: String { id }
}

enum Vectors {
    static func load(_ file: String) -> [Vector] {
        VectorFiles.repositoryEntries(file).map { entry in
            let decoded = entry.fields["decoded"] as? [String: Any]
            return Vector(
                id: entry.id, kind: entry.kind, bytes: entry.bytes, authData: ExpectedAuthData(decoded?["authData"]),
                format: decoded?["fmt"] as? String, cborDiagnostic: decoded?["cbor_diag"] as? String,
                x5cCount: (decoded?["x5c"] as? [Any])?.count)
        }
    }

    static let pythonFIDO2 = load("python-fido2-vectors.json")
    static let webAuthn = load("webauthn-spec.json")

    static func python(_ suffix: String) -> Vector? { pythonFIDO2.python(suffix) }
    static func w3c(_ group: String, _ name: String) -> Vector? { webAuthn.w3c(group, name) }
    static var w3cGroups: [String] { webAuthn.w3cGroups }
}

func hexString(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// CBOR diagnostic notation in the style python-fido2's vectors use, keeping map order.
func diagnostic(_ value: CBORValue) -> String {
    switch value {
    case .unsigned(let n): return String(n)
    case .negative(let n): return "-" + String(UInt64(n) + 1)
    case .byteString(let b): return "h'" + hexString(b) + "'"
    case .textString(let s): return "\"" + s + "\""
    case .array(let a): return "[" + a.map(diagnostic).joined(separator: ", ") + "]"
    case .map(let m):
        return "{"
            + m.entries.map { diagnostic($0.key) + ": " + diagnostic($0.value) }.joined(separator: ", ") + "}"
    case .tagged(let t, let v): return "\(t)(\(diagnostic(v)))"
    case .boolean(let b): return b ? "true" : "false"
    case .null: return "null"
    case .undefined: return "undefined"
    case .simple(let s): return "simple(\(s))"
    case .float(let d): return String(d)
    }
}

/// Checks parsed authenticator data against what a vector states.
func expectMatches(_ parsed: AuthenticatorData, _ expected: ExpectedAuthData, _ id: String) {
    #expect(parsed.rpIDHash == expected.rpIDHash, "\(id)")
    #expect(parsed.flags.rawValue == expected.flags, "\(id)")
    #expect(parsed.signCount == expected.signCount, "\(id)")
    if let aaguid = expected.aaguid {
        #expect(parsed.attestedCredentialData?.aaguid.description == aaguid, "\(id)")
        #expect(parsed.attestedCredentialData?.credentialID == expected.credentialID, "\(id)")
        #expect(
            parsed.attestedCredentialData.map { diagnostic(.map($0.credentialPublicKey.parameters)) }
                == expected.coseDiagnostic, "\(id)")
    } else {
        #expect(parsed.attestedCredentialData == nil, "\(id)")
    }
}

/// A copy of `bytes` with one byte changed.
func flipped(_ bytes: [UInt8], at index: Int? = nil) -> [UInt8] {
    var copy = bytes
    let i = index ?? copy.count / 2
    copy[i] ^= 0x01
    return copy
}

/// Runs python-fido2 (SECURITYKEY_PYTHON) with `script`; `arguments` are passed as sys.argv[1:].
func runPython(_ script: String, _ arguments: [String] = []) async throws -> String {
    guard let python = TestProcess.pythonFIDO2 else {
        throw PythonUnavailable(
            "SECURITYKEY_PYTHON is not set; point it at a Python with python-fido2 (e.g. .venv/bin/python3).")
    }
    let output = try await TestProcess.run(python, ["-c", script] + arguments)
    guard output.status == 0 else { throw PythonUnavailable("python-fido2 failed: " + output.stderrText) }
    return output.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
}

struct PythonUnavailable: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
