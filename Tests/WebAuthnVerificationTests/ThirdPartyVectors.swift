import Foundation
import VectorFiles
import Testing

/// One entry of ../shared/vectors/third-party/*.json (see its README): bytes from other FIDO2
/// implementations' test suites, with what the source states in `expected`.
struct ThirdPartyVector: Sendable, CustomTestStringConvertible {
    var file: String
    var id: String
    var kind: String
    var function: String
    var bytes: [UInt8]
    /// The source's stated values that are hex strings (`x5c[0]`, `aaguid`, ...), decoded.
    var expectedHex: [String: [UInt8]]
    /// The source's stated values that are text (`fmt`, `fido_cred_verify`, ...).
    var expectedText: [String: String]

    var testDescription: String { id }
    /// The source test the entry belongs to: its id without the last component.
    var test: String { id.split(separator: "/").dropLast().joined(separator: "/") }
}

enum ThirdPartyVectors {
    /// ../shared/vectors/third-party beside the package (SECURITYKEY_VECTORS overrides
    /// ../shared/vectors).
    static let directory: URL = {
        if let root = ProcessInfo.processInfo.environment["SECURITYKEY_VECTORS"] {
            return URL(fileURLWithPath: root).appendingPathComponent("third-party")
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/vectors/third-party")
    }()

    static let files = ["authenticator-rs.json", "libfido2-wiredata.json", "py_webauthn.json", "webauthn-rs.json"]

    static func load(_ file: String) -> [ThirdPartyVector] {
        VectorFiles.entries(at: directory.appendingPathComponent(file)).map { entry in
            let source = entry.fields["source"] as? [String: Any]
            let expected = entry.fields["expected"] as? [String: Any] ?? [:]
            var expectedHex: [String: [UInt8]] = [:]
            var expectedText: [String: String] = [:]
            for (key, value) in expected {
                guard let text = value as? String else { continue }
                expectedText[key] = text
                if let b = hexBytes(text), !b.isEmpty { expectedHex[key] = b }
            }
            return ThirdPartyVector(
                file: file, id: entry.id, kind: entry.kind, function: source?["function"] as? String ?? "", bytes: entry.bytes,
                expectedHex: expectedHex, expectedText: expectedText)
        }
    }

    static let all: [ThirdPartyVector] = files.flatMap(load)

    /// Every attestation object, each with the clientDataJSON of the same source test.
    static var attestationObjects: [ThirdPartyVector] {
        all.filter { $0.kind == "attestationObject" && clientData(for: $0) != nil }
    }

    static func clientData(for vector: ThirdPartyVector) -> ThirdPartyVector? {
        all.first { $0.file == vector.file && $0.test == vector.test && $0.kind == "clientDataJSON" }
    }

    /// The entry of `file` whose id ends with `suffix`.
    static func entry(_ file: String, _ suffix: String) -> ThirdPartyVector? {
        all.first { $0.file == file && $0.id.hasSuffix(suffix) }
    }
}
