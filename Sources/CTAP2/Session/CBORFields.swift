import CBOR

/// How this module decodes what an authenticator sends: strictly, by default.
///
/// Every structure a key returns (command replies, the authenticator data inside them, the
/// COSE key in its attested credential data, the extension outputs after it) must be CTAP2
/// canonical CBOR (CTAP 2.1 §8 "Message Encoding"): shortest heads, definite lengths, no tags,
/// map keys in canonical order and never twice. A reply that is not is refused with
/// ``CTAP2Error`` (kind malformed) carrying the ``CBORError`` (`non-canonical-encoding`,
/// `map-key-order`, `duplicate-map-key`, ...), not repaired: two readers of a non-canonical
/// reply can disagree about what it says, and a key that writes one is broken.
///
/// Lenient decoding (well-formed CBOR in any order and form, duplicate keys still refused) is
/// opt-in, for CBOR that no key wrote, at the call sites that ``LenientReason`` names.
enum ResponseDecoding {
    /// Why one call site reads CBOR leniently; each case is one call site, and its reason.
    enum LenientReason {
        /// `AttestationObject(cbor:)`: a WebAuthn client (browser, OS API), not the key, builds
        /// the attestation object (WebAuthn L3 §6.5.4), WebAuthn requires no canonical form for
        /// it, and real clients send keys out of canonical order (a Google Pixel 3a's
        /// attestation object in webauthn-rs's tests). The authData inside is read strictly.
        case clientBuiltAttestationObject
        /// `LargeBlobArray.parse`: the serialized large-blob array is written by whichever
        /// platform last wrote it (CTAP 2.1 §6.10), not by the key; refusing another host's
        /// encoding would make the array read as corrupted and be overwritten, losing its blobs.
        /// Its integrity is checked by the truncated SHA-256 before it is decoded.
        case platformWrittenLargeBlobArray
    }

    /// The decoder for what a key returns: CTAP2 canonical, capped at `maxSize` bytes and 16
    /// levels of nesting.
    static func decoder(maxSize: Int = 1 << 20) -> CBORDecoder {
        CBORDecoder(options: .init(maxDepth: 16, maxInputSize: maxSize, requireCanonical: true))
    }

    /// A decoder of any well-formed CBOR, for the one call site `reason` names.
    static func lenientDecoder(maxSize: Int = 1 << 20, because reason: LenientReason) -> CBORDecoder {
        CBORDecoder(options: .init(maxDepth: 16, maxInputSize: maxSize, requireCanonical: false))
    }

    /// Decodes one reply body that must be a CBOR map: strictly, unless `lenient` names why not.
    static func decodeMap(_ bytes: [UInt8], what: String, lenient: LenientReason? = nil) throws(CTAP2Error)
        -> CBORMap
    {
        let value: CBORValue
        do throws(CBORError) {
            value = try (lenient.map { lenientDecoder(because: $0) } ?? decoder()).decode(bytes)
        } catch {
            throw CTAP2Error.malformed("The \(what) is not valid CTAP2 canonical CBOR.", error)
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
