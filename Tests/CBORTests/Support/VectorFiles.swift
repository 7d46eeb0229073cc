import Foundation
import Testing

/// One CBOR test vector from Tests/Vectors/rfc8949-cbor.json, with what its source says.
struct CBORVector: Sendable, CustomTestStringConvertible {
    var id: String
    /// The source file inside its repository, e.g. `tests/spike/spike.cbor`.
    var sourcePath: String
    var bytes: [UInt8]
    var hex: String
    /// False when the source says the input is not in preferred (canonical) form.
    var roundtrip: Bool
    /// True for inputs a conforming decoder must reject (cbor-wg `bad.cbor`).
    var mustFail: Bool
    /// The decoded value as the source states it (JSON, diagnostic notation or Python repr).
    var expected: Notation?
    /// The source's own diagnostic notation, where it gives one.
    var diagnostic: String?

    var testDescription: String { "\(id) (\(hex.prefix(24)))" }

    var isAppendixA: Bool {
        sourcePath == "appendix_a.json" || sourcePath.hasPrefix("tests/rfc8949-appendixA/")
    }
    var isSpike: Bool { sourcePath == "tests/spike/spike.cbor" }
}

/// One entry of python-fido2-vectors.json whose bytes are a CTAP2 response in CBOR.
struct FIDOResponseVector: Sendable, CustomTestStringConvertible {
    var id: String
    var bytes: [UInt8]
    /// python-fido2's decoding of the bytes, in diagnostic notation.
    var diagnostic: String
    var testDescription: String { id }
}

enum VectorFiles {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Vectors")

    /// The entries of rfc8949-cbor.json; empty if the file cannot be read (a test counts them).
    static let rfc8949: [CBORVector] = (try? loadRFC8949()) ?? []

    /// The CTAP2 response entries of python-fido2-vectors.json; empty if unreadable.
    static let fidoResponses: [FIDOResponseVector] = (try? loadFIDOResponses()) ?? []

    static func load(_ name: String) throws -> Notation {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        return try NotationParser.parse([UInt8](data))
    }

    static func loadRFC8949() throws -> [CBORVector] {
        var vectors: [CBORVector] = []
        for entry in try load("rfc8949-cbor.json").elements {
            guard entry["kind"]?.string == "cbor-vector", let hex = entry["hex"]?.string,
                let bytes = Hex.bytes(hex), let id = entry["id"]?.string,
                let path = entry["source"]?["path"]?.string, let expected = entry["expected"]
            else { continue }
            var stated: Notation?
            if let json = expected["decoded_json"] {
                stated = json
            } else if let text = expected["decoded"]?.string ?? expected["diagnostic"]?.string {
                stated = try NotationParser.parse(text)
            }
            vectors.append(
                CBORVector(
                    id: id, sourcePath: path, bytes: bytes, hex: hex,
                    roundtrip: expected["roundtrip"]?.boolean ?? true,
                    mustFail: expected["file_fail_default"]?.boolean ?? false,
                    expected: stated, diagnostic: expected["diagnostic"]?.string))
        }
        return vectors
    }

    static func loadFIDOResponses() throws -> [FIDOResponseVector] {
        try load("python-fido2-vectors.json").elements.compactMap { entry in
            guard entry["kind"]?.string == "ctap2-response-cbor", let id = entry["id"]?.string,
                let hex = entry["hex"]?.string, let bytes = Hex.bytes(hex),
                let diagnostic = entry["decoded"]?["cbor_diag"]?.string
            else { return nil }
            return FIDOResponseVector(id: id, bytes: bytes, diagnostic: diagnostic)
        }
    }
}
