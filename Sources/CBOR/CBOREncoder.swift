/// Writes CTAP2 canonical CBOR (CTAP 2.1 §8 "Message Encoding"; RFC 8949 §4.2).
///
/// Integers and lengths take their shortest form, every length is definite, map keys are
/// sorted by major type, then by the length of their encoding, then bytewise, and floats use
/// the shortest of half, single or double precision that keeps the value exactly (every NaN as
/// `f97e00`). The encoder trusts its input: it writes tags and duplicate map keys as given, and
/// recurses once per nesting level of the value.
public enum CBOREncoder {
    /// Encodes one data item.
    public static func encode(_ value: CBORValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        append(value, to: &out)
        return out
    }

    /// Appends the encoding of `value` to `out`.
    public static func append(_ value: CBORValue, to out: inout [UInt8]) {
        switch value {
        case .unsigned(let n):
            appendHead(major: 0, argument: n, to: &out)
        case .negative(let n):
            appendHead(major: 1, argument: n, to: &out)
        case .byteString(let bytes):
            appendHead(major: 2, argument: UInt64(bytes.count), to: &out)
            out.append(contentsOf: bytes)
        case .textString(let text):
            let utf8 = text.utf8
            appendHead(major: 3, argument: UInt64(utf8.count), to: &out)
            out.append(contentsOf: utf8)
        case .array(let items):
            appendHead(major: 4, argument: UInt64(items.count), to: &out)
            for item in items { append(item, to: &out) }
        case .map(let map):
            appendHead(major: 5, argument: UInt64(map.count), to: &out)
            let entries = map.entries
            // Maps are mostly built in key order (every CTAP2 request is): then they are
            // written as they are, without sorting a copy of the entries first.
            let inOrder = entries.indices.dropFirst().allSatisfy {
                !keyPrecedes(entries[$0].key, entries[$0 - 1].key)
            }
            for entry in inOrder ? entries : entries.sorted(by: { keyPrecedes($0.key, $1.key) }) {
                append(entry.key, to: &out)
                append(entry.value, to: &out)
            }
        case .tagged(let tag, let item):
            appendHead(major: 6, argument: tag, to: &out)
            append(item, to: &out)
        case .boolean(let b):
            out.append(b ? 0xF5 : 0xF4)
        case .null:
            out.append(0xF6)
        case .undefined:
            out.append(0xF7)
        case .simple(let v):
            if v < 24 {
                out.append(0xE0 | v)
            } else {
                out.append(0xF8)
                out.append(v)
            }
        case .float(let d):
            appendFloat(d, to: &out)
        }
    }

    /// Whether map key `a` sorts before `b` in CTAP2 canonical order, without encoding the keys
    /// where their values tell: integers by major type then argument (a shorter head is a
    /// smaller argument, and equal-length heads compare bytewise as their arguments do), text and
    /// byte strings by length then bytes (equal lengths have equal heads). Other keys are
    /// encoded and compared with ``canonicalOrder(_:_:)``.
    static func keyPrecedes(_ a: CBORValue, _ b: CBORValue) -> Bool {
        switch (a, b) {
        case (.unsigned(let x), .unsigned(let y)), (.negative(let x), .negative(let y)): return x < y
        case (.unsigned, .negative): return true
        case (.negative, .unsigned): return false
        case (.textString(let x), .textString(let y)):
            let (u, v) = (x.utf8, y.utf8)
            if u.count != v.count { return u.count < v.count }
            return u.lexicographicallyPrecedes(v)
        case (.byteString(let x), .byteString(let y)):
            if x.count != y.count { return x.count < y.count }
            return x.lexicographicallyPrecedes(y)
        default:
            return canonicalOrder(encode(a), encode(b))
        }
    }

    /// CTAP2 canonical key order (CTAP 2.1 §8): `a` sorts before `b`.
    ///
    /// A lower major type sorts first; within a major type the shorter encoding sorts first,
    /// then the bytewise lower one. This differs from RFC 8949 §4.2.1 (bytewise only) and from
    /// RFC 7049 §3.9 (length first) when keys of different major types are mixed, for example
    /// `24` (`1818`) sorts before `-1` (`20`).
    public static func canonicalOrder(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        canonicalOrder(a[...], b[...])
    }

    /// CTAP2 canonical key order on slices of an input buffer.
    static func canonicalOrder(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
        let majorA = (a.first ?? 0) >> 5
        let majorB = (b.first ?? 0) >> 5
        if majorA != majorB { return majorA < majorB }
        if a.count != b.count { return a.count < b.count }
        return a.lexicographicallyPrecedes(b)
    }

    static func appendHead(major: UInt8, argument n: UInt64, to out: inout [UInt8]) {
        let m = major << 5
        switch n {
        case 0..<24:
            out.append(m | UInt8(n))
        case 24...0xFF:
            out.append(m | 24)
            out.append(UInt8(n))
        case 0x100...0xFFFF:
            out.append(m | 25)
            appendBigEndian(UInt16(n), to: &out)
        case 0x1_0000...0xFFFF_FFFF:
            out.append(m | 26)
            appendBigEndian(UInt32(n), to: &out)
        default:
            out.append(m | 27)
            appendBigEndian(n, to: &out)
        }
    }

    static func appendBigEndian<T: FixedWidthInteger>(_ v: T, to out: inout [UInt8]) {
        var be = v.bigEndian
        withUnsafeBytes(of: &be) { out.append(contentsOf: $0) }
    }

    static func appendFloat(_ d: Double, to out: inout [UInt8]) {
        if d.isNaN {
            out.append(contentsOf: [0xF9, 0x7E, 0x00])
            return
        }
        let f = Float(d)
        if Double(f) == d {
            if let half = HalfFloat.exactBits(of: f) {
                out.append(0xF9)
                appendBigEndian(half, to: &out)
            } else {
                out.append(0xFA)
                appendBigEndian(f.bitPattern, to: &out)
            }
        } else {
            out.append(0xFB)
            appendBigEndian(d.bitPattern, to: &out)
        }
    }
}

/// IEEE 754 binary16 conversions, written out so they behave the same on every platform.
enum HalfFloat {
    /// The value of a binary16 bit pattern.
    static func value(of bits: UInt16) -> Double {
        let sign: Double = (bits & 0x8000) != 0 ? -1 : 1
        let exponent = Int((bits >> 10) & 0x1F)
        let mantissa = Double(bits & 0x3FF)
        switch exponent {
        case 0: return sign * mantissa * 0x1p-24
        case 31: return mantissa == 0 ? sign * .infinity : .nan
        default:
            return sign * (1 + mantissa / 1024) * Double(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }

    /// The binary16 bit pattern holding exactly `f`, or nil when binary16 cannot hold it.
    static func exactBits(of f: Float) -> UInt16? {
        let bits = f.bitPattern
        let sign = UInt16((bits >> 16) & 0x8000)
        let exponent = Int((bits >> 23) & 0xFF)
        let mantissa = bits & 0x7F_FFFF
        if exponent == 0xFF {
            return mantissa == 0 ? sign | 0x7C00 : nil
        }
        if exponent == 0 {
            // Zero, or a single-precision subnormal (far below binary16's range).
            return mantissa == 0 ? sign : nil
        }
        let e = exponent - 127
        if e >= -14 && e <= 15 {
            guard mantissa & 0x1FFF == 0 else { return nil }
            return sign | UInt16(e + 15) << 10 | UInt16(mantissa >> 13)
        }
        if e >= -24 && e < -14 {
            let full = mantissa | 0x80_0000
            let shift = UInt32(-14 - e + 13)
            guard full & ((1 << shift) - 1) == 0 else { return nil }
            return sign | UInt16(full >> shift)
        }
        return nil
    }
}
