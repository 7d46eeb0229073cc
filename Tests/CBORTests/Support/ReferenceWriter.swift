import CBOR

/// SplitMix64: a small seeded generator, so every property test run sees the same values.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random CBOR values covering every major type and the boundaries of each head size.
struct ValueGenerator {
    var rng: SeededGenerator
    var allowTags = true

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }

    mutating func integer() -> UInt64 {
        let edges: [UInt64] = [0, 1, 23, 24, 255, 256, 65535, 65536, 0xFFFF_FFFF, 0x1_0000_0000, .max]
        if chance(0.5) { return edges.randomElement(using: &rng) ?? 0 }
        let bits = [5, 8, 16, 32, 64].randomElement(using: &rng) ?? 8
        return UInt64.random(in: 0...UInt64.max, using: &rng) >> UInt64(64 - bits)
    }

    mutating func length() -> Int {
        [0, 1, 2, 23, 24, 25, 255, 256, Int.random(in: 0..<40, using: &rng)].randomElement(using: &rng) ?? 0
    }

    mutating func text() -> String {
        let pieces: [String] = [
            "a", "Z", "0", " ", "\"", "\\", "\n", "\u{01}", "\u{7F}", "é", "水", "𐅑", "\u{FEFF}",
        ]
        var s = ""
        for _ in 0..<min(length(), 60) { s += pieces.randomElement(using: &rng) ?? "" }
        return s
    }

    mutating func float() -> Double {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: return Double(Float16(bitPattern: UInt16.random(in: 0...UInt16.max, using: &rng)))
        case 1: return Double(Float(bitPattern: UInt32.random(in: 0...UInt32.max, using: &rng)))
        case 2: return Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &rng))
        case 3:
            return [0.0, -0.0, 1.5, 65504, 100000, .infinity, -.infinity, .nan].randomElement(using: &rng)
                ?? 0
        case 4: return Double(Int.random(in: -70000...70000, using: &rng)) / 8
        default: return Double.random(in: -1e40...1e40, using: &rng)
        }
    }

    mutating func value(depth: Int = 0) -> CBORValue {
        let leaf = depth >= 4 || chance(0.55)
        switch Int.random(in: 0..<(leaf ? 9 : 12), using: &rng) {
        case 0: return .unsigned(integer())
        case 1: return .negative(integer())
        case 2: return .byteString((0..<length()).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 3: return .textString(text())
        case 4: return .float(float())
        case 5: return .boolean(chance(0.5))
        case 6: return [.null, .undefined].randomElement(using: &rng) ?? .null
        case 7:
            return .simple(
                chance(0.5) ? UInt8.random(in: 0...19, using: &rng) : UInt8.random(in: 32...255, using: &rng))
        case 8: return .textString(text())
        case 9: return .array((0..<min(length(), 8)).map { _ in value(depth: depth + 1) })
        case 10:
            var map = CBORMap()
            for _ in 0..<min(length(), 8) {
                let key =
                    chance(0.6)
                    ? (chance(0.5) ? CBORValue.unsigned(integer()) : .negative(integer())) : value(depth: 3)
                map[key] = value(depth: depth + 1)
            }
            return .map(map)
        default:
            guard allowTags else { return .textString(text()) }
            if chance(0.3) {
                return .tagged(
                    chance(0.5) ? 2 : 3,
                    .byteString((0..<length()).map { _ in UInt8.random(in: 0...255, using: &rng) }))
            }
            let tag =
                [4, 24, 55799, 0x1_0000, 0x1_0000_0000, UInt64.random(in: 6...1000, using: &rng)]
                .randomElement(using: &rng) ?? 6
            return .tagged(tag, value(depth: depth + 1))
        }
    }
}

/// A CBOR writer written for the tests, independently of `CBOREncoder`.
///
/// With `loose == false` it writes the CTAP2 canonical form (CTAP 2.1 §8), which must agree
/// byte for byte with the module's encoder. With `loose == true` it takes random liberties that
/// RFC 8949 allows and CTAP2 forbids (longer heads, indefinite lengths, chunked strings, wider
/// floats) and records in `deviated` whether it took any.
struct ReferenceWriter {
    var rng: SeededGenerator
    var loose: Bool
    private(set) var deviated = false
    private(set) var out: [UInt8] = []

    init(rng: SeededGenerator, loose: Bool) {
        self.rng = rng
        self.loose = loose
    }

    static func canonical(_ value: CBORValue) -> [UInt8] {
        var w = ReferenceWriter(rng: SeededGenerator(seed: 0), loose: false)
        w.write(value)
        return w.out
    }

    private mutating func liberty() -> Bool {
        guard loose, Int.random(in: 0..<4, using: &rng) == 0 else { return false }
        deviated = true
        return true
    }

    private mutating func head(_ major: UInt8, _ n: UInt64) {
        let minimal: Int = n < 24 ? 0 : n <= 0xFF ? 1 : n <= 0xFFFF ? 2 : n <= 0xFFFF_FFFF ? 4 : 8
        var size = minimal
        if minimal < 8, liberty() {
            size = [1, 2, 4, 8].filter { $0 > minimal }.randomElement(using: &rng) ?? 8
        }
        let additional: UInt8 = size == 0 ? UInt8(n) : size == 1 ? 24 : size == 2 ? 25 : size == 4 ? 26 : 27
        out.append(major << 5 | additional)
        for k in stride(from: size - 1, through: 0, by: -1) {
            out.append(UInt8(truncatingIfNeeded: n >> (8 * UInt64(k))))
        }
    }

    private mutating func string(_ major: UInt8, _ bytes: [UInt8], splittable: (Int) -> Bool) {
        if liberty() {
            out.append(major << 5 | 31)
            var start = 0
            while start < bytes.count {
                var end = min(bytes.count, start + Int.random(in: 1...8, using: &rng))
                while !splittable(end) { end += 1 }
                head(major, UInt64(end - start))
                out += bytes[start..<end]
                start = end
            }
            if chance() { head(major, 0) }  // an empty chunk is allowed
            out.append(0xFF)
        } else {
            head(major, UInt64(bytes.count))
            out += bytes
        }
    }

    private mutating func chance() -> Bool { Bool.random(using: &rng) }

    mutating func write(_ value: CBORValue) {
        switch value {
        case .unsigned(let n): head(0, n)
        case .negative(let n): head(1, n)
        case .byteString(let b): string(2, b, splittable: { _ in true })
        case .textString(let s):
            let utf8 = Array(s.utf8)
            // Chunks of text must each be whole UTF-8 (RFC 8949 §3.2.3).
            string(3, utf8, splittable: { $0 >= utf8.count || utf8[$0] & 0xC0 != 0x80 })
        case .array(let items):
            if liberty() {
                out.append(0x9F)
                for item in items { write(item) }
                out.append(0xFF)
            } else {
                head(4, UInt64(items.count))
                for item in items { write(item) }
            }
        case .map(let map):
            // CTAP 2.1 §8: lower major type first, then shorter encoding, then bytewise.
            let sorted = map.entries.map { (ReferenceWriter.canonical($0.key), $0) }.sorted { a, b in
                let (x, y) = (a.0, b.0)
                if x[0] >> 5 != y[0] >> 5 { return x[0] >> 5 < y[0] >> 5 }
                if x.count != y.count { return x.count < y.count }
                return x.lexicographicallyPrecedes(y)
            }
            let indefinite = liberty()
            if indefinite { out.append(0xBF) } else { head(5, UInt64(sorted.count)) }
            for (_, entry) in sorted {
                write(entry.key)
                write(entry.value)
            }
            if indefinite { out.append(0xFF) }
        case .tagged(let tag, let item):
            head(6, tag)
            write(item)
        case .boolean(let b): out.append(b ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        case .simple(let v):
            if v < 24 { out.append(0xE0 | v) } else { out += [0xF8, v] }
        case .float(let d): float(d)
        }
    }

    private mutating func float(_ d: Double) {
        if d.isNaN {
            out += [0xF9, 0x7E, 0x00]
            return
        }
        var size = Double(Float16(d)) == d ? 2 : Double(Float(d)) == d ? 4 : 8
        if size < 8, liberty() { size = size == 2 && chance() ? 4 : 8 }
        switch size {
        case 2:
            out.append(0xF9)
            let bits = Float16(d).bitPattern
            out += [UInt8(bits >> 8), UInt8(truncatingIfNeeded: bits)]
        case 4:
            out.append(0xFA)
            let bits = Float(d).bitPattern
            for k in stride(from: 24, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: bits >> UInt32(k)))
            }
        default:
            out.append(0xFB)
            let bits = d.bitPattern
            for k in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: bits >> UInt64(k)))
            }
        }
    }
}
