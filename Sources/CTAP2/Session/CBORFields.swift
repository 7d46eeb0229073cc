import CBOR

/// How this module decodes what an authenticator sends.
///
/// Requests go out CTAP2 canonical (``CBOREncoder`` always writes that). Replies are decoded
/// *leniently*: real keys have shipped non-shortest lengths (python-fido2's recorded
/// makeCredential reply encodes a 196-byte authData with a two-byte length) and the CTAP 2.1
/// spec only requires the *authenticator* to accept canonical input. Lenient still rejects
/// ill-formed CBOR, duplicate map keys, over-deep nesting and lengths past the input.
enum ResponseDecoding {
    /// The decoder for authenticator replies, capped at `maxSize` bytes.
    static func decoder(maxSize: Int = 1 << 20) -> CBORDecoder {
        CBORDecoder(options: .init(maxDepth: 16, maxInputSize: maxSize, requireCanonical: false))
    }

    /// Decodes one reply body that must be a CBOR map.
    static func decodeMap(_ bytes: [UInt8], what: String) throws(CTAP2Error) -> CBORMap {
        let value: CBORValue
        do throws(CBORError) {
            value = try decoder().decode(bytes)
        } catch {
            throw CTAP2Error.malformed("The \(what) is not valid CBOR.", error)
        }
        guard let map = value.mapValue else {
            throw CTAP2Error.malformed("The \(what) is not a CBOR map.")
        }
        return map
    }
}

/// Typed reads of the fields of a decoded map, each failing with a malformed-response error
/// that names the field.
struct FieldReader {
    let map: CBORMap
    /// What the map is, for messages ("getInfo response").
    let context: String
    /// Where the entries under small unsigned keys (CTAP2 members are 0x01...0x1F) sit in the
    /// map, found in one pass so that reading each member does not scan the map again; -1 for
    /// none.
    private let small: [Int32]
    private static let smallKeys = 32

    init(_ map: CBORMap, _ context: String) {
        self.map = map
        self.context = context
        var small = [Int32](repeating: -1, count: Self.smallKeys)
        for (index, entry) in map.entries.enumerated() {
            // The first entry wins, as CBORMap's subscript has it.
            if case .unsigned(let n) = entry.key, n < Self.smallKeys, small[Int(n)] < 0 {
                small[Int(n)] = Int32(truncatingIfNeeded: index)
            }
        }
        self.small = small
    }

    /// The entries whose keys are not among the unsigned `known` ones, kept for callers.
    func unknownEntries(known: ClosedRange<UInt64>) -> CBORMap {
        CBORMap(
            entries: map.entries.filter { entry in
                guard case .unsigned(let n) = entry.key else { return true }
                return !known.contains(n)
            })
    }

    func value(_ key: CBORValue) -> CBORValue? {
        if case .unsigned(let n) = key, n < Self.smallKeys {
            let index = small[Int(n)]
            // Not `index < 0 ? nil : …`: CBORValue is ExpressibleByNilLiteral, so that nil would be
            // CBOR null.
            guard index >= 0 else { return nil }
            return map.entries[Int(index)].value
        }
        return map[key]
    }

    private func wrongType(_ name: String, _ expected: String) -> CTAP2Error {
        .malformed("The \(name) field of the \(context) is not \(expected).")
    }

    func missing(_ name: String) -> CTAP2Error {
        .malformed("The \(context) lacks its required \(name) field.")
    }

    func bytes(_ key: CBORValue, _ name: String) throws(CTAP2Error) -> [UInt8]? {
        guard let v = value(key) else { return nil }
        guard let b = v.bytesValue else { throw wrongType(name, "a byte string") }
        return b
    }

    func text(_ key: CBORValue, _ name: String) throws(CTAP2Error) -> String? {
        guard let v = value(key) else { return nil }
        guard let s = v.stringValue else { throw wrongType(name, "a text string") }
        return s
    }

    func bool(_ key: CBORValue, _ name: String) throws(CTAP2Error) -> Bool? {
        guard let v = value(key) else { return nil }
        guard let b = v.boolValue else { throw wrongType(name, "a Boolean") }
        return b
    }

    func uint(_ key: CBORValue, _ name: String) throws(CTAP2Error) -> UInt64? {
        guard let v = value(key) else { return nil }
        guard let n = v.uint64Value else { throw wrongType(name, "an unsigned integer") }
        return n
    }

    func int(_ key: CBORValue, _ name: String) throws(CTAP2Error) -> Int? {
        guard let v = value(key) else { return nil }
        guard let n = v.intValue else { throw wrongType(name, "an integer") }
        return n
    }

    func subMap(_ key: CBORValue, _ name: String) throws(CTAP2Error) -> CBORMap? {
        guard let v = value(key) else { return nil }
        guard let m = v.mapValue else { throw wrongType(name, "a map") }
        return m
    }

    func array(_ key: CBORValue, _ name: String) throws(CTAP2Error) -> [CBORValue]? {
        guard let v = value(key) else { return nil }
        guard let a = v.arrayValue else { throw wrongType(name, "an array") }
        return a
    }

    func textArray(_ key: CBORValue, _ name: String) throws(CTAP2Error) -> [String]? {
        guard let items = try array(key, name) else { return nil }
        var out: [String] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard let s = item.stringValue else { throw wrongType(name, "an array of text strings") }
            out.append(s)
        }
        return out
    }

    func uintArray(_ key: CBORValue, _ name: String) throws(CTAP2Error) -> [UInt64]? {
        guard let items = try array(key, name) else { return nil }
        var out: [UInt64] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard let n = item.uint64Value else { throw wrongType(name, "an array of unsigned integers") }
            out.append(n)
        }
        return out
    }
}
