import Foundation

/// One entry of a vector file (Tests/Vectors/*.json, ../shared/vectors/**.json): its id, kind,
/// the bytes its source states (`hex`), and the rest of the entry as parsed JSON for the test
/// target to read what it needs (`decoded`, `expected`, `source`).
public struct VectorEntry {
    /// The entry's id (`python-fido2/test_ctap2/...`, `w3c/<group>/<name>`).
    public var id: String
    /// What the bytes are (`attestationObject`, `ctap2-response-cbor`, ...).
    public var kind: String
    /// The bytes as the source states them.
    public var bytes: [UInt8]
    /// The whole entry.
    public var fields: [String: Any]
}

/// A vector known by its id and kind: how ids name W3C groups and entries, and the look-ups
/// every test target makes, written once.
public protocol IdentifiedVector {
    /// The entry's id.
    var id: String { get }
    /// What the bytes are.
    var kind: String { get }
}

extension IdentifiedVector {
    /// The W3C test case a W3C entry belongs to (`sctn-test-vectors-packed-es256`).
    public var group: String { id.split(separator: "/").dropFirst().first.map(String.init) ?? "" }
    /// The entry name inside its group (`registration/attestationObject`).
    public var name: String { id.split(separator: "/").dropFirst(2).joined(separator: "/") }
}

extension VectorEntry: IdentifiedVector {}

extension Array where Element: IdentifiedVector {
    /// The python-fido2 entry with this id suffix (after `python-fido2/`).
    public func python(_ suffix: String) -> Element? { first { $0.id == "python-fido2/" + suffix } }

    /// The W3C entry of `group` named `name`.
    public func w3c(_ group: String, _ name: String) -> Element? {
        first { $0.group == group && $0.name == name }
    }

    /// The W3C test cases, in file order, that hold an attestation object.
    public var w3cGroups: [String] {
        var seen: [String] = []
        for v in self where v.kind == "attestationObject" && !seen.contains(v.group) { seen.append(v.group) }
        return seen
    }
}

/// Reads vector files; shared by the test targets so each reads the same files the same way.
public enum VectorFiles {
    /// Tests/Vectors in this repository.
    public static let repositoryDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Vectors")

    /// The entries of the JSON array in `url` that have an id, a kind and valid hex; none when
    /// the file is missing or not such an array.
    public static func entries(at url: URL) -> [VectorEntry] {
        guard let data = try? Data(contentsOf: url),
            let list = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { return [] }
        return list.compactMap { entry in
            guard let id = entry["id"] as? String, let kind = entry["kind"] as? String,
                let hex = entry["hex"] as? String, let bytes = hexBytes(hex)
            else { return nil }
            return VectorEntry(id: id, kind: kind, bytes: bytes, fields: entry)
        }
    }

    /// The entries of a file in Tests/Vectors.
    public static func repositoryEntries(_ file: String) -> [VectorEntry] {
        entries(at: repositoryDirectory.appendingPathComponent(file))
    }
}

/// The bytes `text` spells in hex (two digits a byte), or nil when it is not hex.
public func hexBytes(_ text: String) -> [UInt8]? {
    let chars = Array(text.utf8)
    guard chars.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(chars.count / 2)
    var i = 0
    while i < chars.count {
        guard let byte = UInt8(String(decoding: chars[i..<(i + 2)], as: UTF8.self), radix: 16) else {
            return nil
        }
        out.append(byte)
        i += 2
    }
    return out
}
