/// One CBOR data item (RFC 8949 §3).
///
/// Integers keep CBOR's own split into unsigned and negative so the full range from
/// -2^64 to 2^64-1 is representable. Maps keep the order in which their entries were
/// decoded; the encoder always writes them in CTAP2 canonical order.
public enum CBORValue: Hashable, Sendable {
    /// Major type 0: an unsigned integer.
    case unsigned(UInt64)
    /// Major type 1: the integer `-1 - n`.
    case negative(UInt64)
    /// Major type 2: a byte string.
    case byteString([UInt8])
    /// Major type 3: a UTF-8 text string.
    case textString(String)
    /// Major type 4: an array.
    case array([CBORValue])
    /// Major type 5: a map.
    case map(CBORMap)
    /// Major type 6: a tagged item.
    indirect case tagged(UInt64, CBORValue)
    /// Major type 7, values 20 and 21.
    case boolean(Bool)
    /// Major type 7, value 22.
    case null
    /// Major type 7, value 23.
    case undefined
    /// Major type 7, any other simple value (0...19 and 32...255).
    case simple(UInt8)
    /// Major type 7, a half, single or double precision float.
    case float(Double)

    /// CBOR equality: floats by bit pattern, with every NaN equal to every other.
    public static func == (lhs: CBORValue, rhs: CBORValue) -> Bool {
        switch (lhs, rhs) {
        case (.unsigned(let a), .unsigned(let b)): a == b
        case (.negative(let a), .negative(let b)): a == b
        case (.byteString(let a), .byteString(let b)): a == b
        case (.textString(let a), .textString(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.map(let a), .map(let b)): a == b
        case (.tagged(let t, let a), .tagged(let u, let b)): t == u && a == b
        case (.boolean(let a), .boolean(let b)): a == b
        case (.null, .null), (.undefined, .undefined): true
        case (.simple(let a), .simple(let b)): a == b
        case (.float(let a), .float(let b)): (a.isNaN && b.isNaN) || a.bitPattern == b.bitPattern
        default: false
        }
    }

    /// Hashes consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        // The major type, then what distinguishes values within it; floats hash as they compare.
        hasher.combine(majorType)
        switch self {
        case .unsigned(let n), .negative(let n): hasher.combine(n)
        case .byteString(let b): hasher.combine(b)
        case .textString(let t): hasher.combine(t)
        case .array(let a): hasher.combine(a)
        case .map(let m): hasher.combine(m)
        case .tagged(let t, let v):
            hasher.combine(t)
            hasher.combine(v)
        case .boolean(let b): hasher.combine(b ? 21 as UInt16 : 20)
        case .null: hasher.combine(22 as UInt16)
        case .undefined: hasher.combine(23 as UInt16)
        case .simple(let v): hasher.combine(UInt16(v))
        case .float(let d):
            hasher.combine(256 as UInt16)
            hasher.combine(d.isNaN ? Double.nan.bitPattern : d.bitPattern)
        }
    }
}

extension CBORValue {
    /// A CBOR integer from a Swift `Int`.
    public static func int(_ value: Int) -> CBORValue {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// A CBOR integer from a Swift `Int64`.
    public static func int64(_ value: Int64) -> CBORValue {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// The value as an `Int`, when it is an integer that fits.
    public var intValue: Int? {
        switch self {
        case .unsigned(let n): return n <= UInt64(Int.max) ? Int(n) : nil
        case .negative(let n): return n <= UInt64(Int.max) ? -1 - Int(n) : nil
        default: return nil
        }
    }

    /// The value as a `UInt64`, when it is a non-negative integer.
    public var uint64Value: UInt64? {
        if case .unsigned(let n) = self { return n }
        return nil
    }

    /// The bytes, when the value is a byte string.
    public var bytesValue: [UInt8]? {
        if case .byteString(let b) = self { return b }
        return nil
    }

    /// The text, when the value is a text string.
    public var stringValue: String? {
        if case .textString(let s) = self { return s }
        return nil
    }

    /// The Boolean, when the value is `true` or `false`.
    public var boolValue: Bool? {
        if case .boolean(let b) = self { return b }
        return nil
    }

    /// The elements, when the value is an array.
    public var arrayValue: [CBORValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The map, when the value is a map.
    public var mapValue: CBORMap? {
        if case .map(let m) = self { return m }
        return nil
    }

    /// The major type this value encodes as (RFC 8949 §3.1).
    public var majorType: UInt8 {
        switch self {
        case .unsigned: 0
        case .negative: 1
        case .byteString: 2
        case .textString: 3
        case .array: 4
        case .map: 5
        case .tagged: 6
        case .boolean, .null, .undefined, .simple, .float: 7
        }
    }
}

extension CBORValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByNilLiteral
{
    /// An integer from a literal.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// A text string from a literal.
    public init(stringLiteral value: String) { self = .textString(value) }
    /// `true` or `false` from a literal.
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    /// An array from a literal.
    public init(arrayLiteral elements: CBORValue...) { self = .array(elements) }
    /// `null` from `nil`.
    public init(nilLiteral: ()) { self = .null }
}

/// A CBOR map: entries in the order they were decoded or added.
///
/// Lookups are linear; CTAP2 maps have at most a few dozen entries.
public struct CBORMap: Hashable, Sendable, ExpressibleByDictionaryLiteral, Sequence {
    /// One key/value pair.
    public struct Entry: Hashable, Sendable {
        /// The key.
        public var key: CBORValue
        /// The value.
        public var value: CBORValue
        /// Creates an entry.
        public init(key: CBORValue, value: CBORValue) {
            self.key = key
            self.value = value
        }
    }

    /// The entries, in order.
    public private(set) var entries: [Entry]

    /// An empty map.
    public init() { entries = [] }

    /// A map with these entries, in this order.
    ///
    /// Duplicate keys are kept as given and the encoder writes them all, which no conforming
    /// decoder accepts; the decoder never produces them.
    public init(entries: [Entry]) { self.entries = entries }

    /// A map from a literal, entries in the order written.
    public init(dictionaryLiteral elements: (CBORValue, CBORValue)...) {
        entries = elements.map { Entry(key: $0.0, value: $0.1) }
    }

    /// The number of entries.
    public var count: Int { entries.count }

    /// Whether the map has no entries.
    public var isEmpty: Bool { entries.isEmpty }

    /// The value stored under `key`, or nil; setting nil removes the entry.
    public subscript(key: CBORValue) -> CBORValue? {
        get { entries.first(where: { $0.key == key })?.value }
        set {
            if let index = entries.firstIndex(where: { $0.key == key }) {
                if let newValue { entries[index].value = newValue } else { entries.remove(at: index) }
            } else if let newValue {
                entries.append(Entry(key: key, value: newValue))
            }
        }
    }

    /// The value stored under an integer key.
    public subscript(key: Int) -> CBORValue? {
        get { self[CBORValue.int(key)] }
        set { self[CBORValue.int(key)] = newValue }
    }

    /// The value stored under a text key.
    public subscript(key: String) -> CBORValue? {
        get { self[CBORValue.textString(key)] }
        set { self[CBORValue.textString(key)] = newValue }
    }

    /// The keys, in order.
    public var keys: [CBORValue] { entries.map(\.key) }

    /// The entries, in order.
    public func makeIterator() -> IndexingIterator<[Entry]> { entries.makeIterator() }

    /// Equality ignores entry order, as map semantics require.
    public static func == (lhs: CBORMap, rhs: CBORMap) -> Bool {
        guard lhs.entries.count == rhs.entries.count else { return false }
        return lhs.entries.allSatisfy { rhs[$0.key] == $0.value }
    }

    /// Hashes consistently with `==`, whatever the entry order.
    public func hash(into hasher: inout Hasher) {
        // Order-independent: combine per-entry hashes commutatively.
        var combined = 0
        for entry in entries {
            var h = Hasher()
            h.combine(entry.key)
            h.combine(entry.value)
            combined ^= h.finalize()
        }
        hasher.combine(entries.count)
        hasher.combine(combined)
    }
}
