import CBOR

/// A value written in text by someone other than the code under test: JSON (RFC 8259), RFC 8949
/// §8 diagnostic notation, and the Python reprs (`NaN`, `1e+300`, `datetime.datetime(…)`) that
/// the vector files carry. Parsed by `NotationParser`, which shares no code with the CBOR module.
indirect enum Notation: Equatable, Sendable {
    /// An integer of any size: sign and decimal magnitude without leading zeros.
    case integer(negative: Bool, magnitude: String)
    case float(Double)
    case bytes([UInt8])
    case text(String)
    case array([Notation])
    case map([Pair])
    case tag(UInt64, Notation)
    case simple(Int)
    case bool(Bool)
    case null
    case undefined
    /// Python's `datetime.datetime(y, m, d, H, M[, S[, µs]], tzinfo=…)`, in UTC.
    case dateTime([Int])

    struct Pair: Equatable, Sendable {
        var key: Notation
        var value: Notation
    }

    /// The member of a JSON object with this key.
    subscript(key: String) -> Notation? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first(where: { $0.key == .text(key) })?.value
    }

    var string: String? {
        if case .text(let s) = self { return s }
        return nil
    }

    var boolean: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    var elements: [Notation] {
        if case .array(let a) = self { return a }
        return []
    }
}

struct NotationError: Error, CustomStringConvertible {
    var description: String
}

/// A recursive-descent reader for `Notation`, over UTF-8 bytes.
struct NotationParser {
    private let text: [UInt8]
    private var i = 0

    static func parse(_ string: String) throws -> Notation {
        try parse(Array(string.utf8))
    }

    static func parse(_ utf8: [UInt8]) throws -> Notation {
        var p = NotationParser(text: utf8)
        let value = try p.value()
        p.skipSpace()
        guard p.i == p.text.count else { throw p.error("trailing text") }
        return value
    }

    private init(text: [UInt8]) { self.text = text }

    private func error(_ what: String) -> NotationError {
        let context = String(decoding: text[i..<min(text.count, i + 40)], as: UTF8.self)
        return NotationError(description: "\(what) at \(i): \(context)")
    }

    private var peek: UInt8? { i < text.count ? text[i] : nil }

    private mutating func skipSpace() {
        while let c = peek, c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 { i += 1 }
    }

    private mutating func consume(_ literal: String) -> Bool {
        let bytes = Array(literal.utf8)
        guard text.count - i >= bytes.count, Array(text[i..<(i + bytes.count)]) == bytes else { return false }
        i += bytes.count
        return true
    }

    private mutating func expect(_ literal: String) throws {
        guard consume(literal) else { throw error("expected \(literal)") }
    }

    mutating func value() throws -> Notation {
        skipSpace()
        guard let c = peek else { throw error("unexpected end") }
        switch c {
        case UInt8(ascii: "["):
            i += 1
            return .array(try list(until: "]"))
        case UInt8(ascii: "{"):
            i += 1
            var pairs: [Notation.Pair] = []
            skipSpace()
            if consume("}") { return .map(pairs) }
            repeat {
                let key = try value()
                skipSpace()
                try expect(":")
                pairs.append(Notation.Pair(key: key, value: try value()))
                skipSpace()
            } while consume(",")
            try expect("}")
            return .map(pairs)
        case UInt8(ascii: "\""):
            return .text(try quoted())
        case UInt8(ascii: "("):
            // An indefinite-length string in diagnostic notation: (_ h'01', h'02').
            try expect("(_")
            let chunks = try list(until: ")")
            if chunks.allSatisfy({ if case .text = $0 { true } else { false } }) {
                return .text(chunks.map { $0.string ?? "" }.joined())
            }
            var bytes: [UInt8] = []
            for chunk in chunks {
                guard case .bytes(let b) = chunk else { throw error("mixed chunks") }
                bytes += b
            }
            return .bytes(bytes)
        default:
            break
        }
        if consume("h'") { return .bytes(try hexUntilQuote()) }
        if consume("true") { return .bool(true) }
        if consume("false") { return .bool(false) }
        if consume("null") { return .null }
        if consume("undefined") { return .undefined }
        if consume("NaN") { return .float(.nan) }
        if consume("Infinity") { return .float(.infinity) }
        if consume("-Infinity") { return .float(-.infinity) }
        if consume("simple(") {
            let n = try number()
            try expect(")")
            guard case .integer(false, let digits) = n, let v = Int(digits) else { throw error("simple") }
            return .simple(v)
        }
        if consume("datetime.datetime(") {
            var fields: [Int] = []
            while true {
                skipSpace()
                if consume("tzinfo=datetime.timezone.utc)") { return .dateTime(fields) }
                guard case .integer(false, let digits) = try number(), let v = Int(digits) else {
                    throw error("datetime field")
                }
                fields.append(v)
                skipSpace()
                try expect(",")
            }
        }
        let n = try number()
        if case .integer(false, let digits) = n, consume("(") {
            guard let tag = UInt64(digits) else { throw error("tag number") }
            let content = try value()
            skipSpace()
            try expect(")")
            return .tag(tag, content)
        }
        return n
    }

    private mutating func list(until close: String) throws -> [Notation] {
        var items: [Notation] = []
        skipSpace()
        if consume(close) { return items }
        repeat {
            items.append(try value())
            skipSpace()
        } while consume(",")
        try expect(close)
        return items
    }

    private mutating func number() throws -> Notation {
        skipSpace()
        let start = i
        if peek == UInt8(ascii: "-") { i += 1 }
        var isFloat = false
        while let c = peek {
            if c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") {
                i += 1
            } else if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E")
                || ((c == UInt8(ascii: "+") || c == UInt8(ascii: "-")) && isFloat)
            {
                isFloat = true
                i += 1
            } else {
                break
            }
        }
        let literal = String(decoding: text[start..<i], as: UTF8.self)
        guard !literal.isEmpty, literal != "-" else { throw error("expected a value") }
        if isFloat {
            guard let d = Double(literal) else { throw error("float") }
            return .float(d)
        }
        let negative = literal.hasPrefix("-")
        var digits = Substring(negative ? String(literal.dropFirst()) : literal)
        while digits.count > 1, digits.first == "0" { digits = digits.dropFirst() }
        return .integer(negative: negative, magnitude: String(digits))
    }

    private mutating func hexUntilQuote() throws -> [UInt8] {
        var out: [UInt8] = []
        var high: UInt8?
        while let c = peek, c != UInt8(ascii: "'") {
            i += 1
            guard let v = Self.hexValue(c) else { throw error("hex digit") }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        guard high == nil else { throw error("odd hex") }
        try expect("'")
        return out
    }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private mutating func quoted() throws -> String {
        try expect("\"")
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() throws {
            guard let s = String(validating: raw, as: UTF8.self) else {
                throw NotationError(description: "utf8")
            }
            scalars.append(contentsOf: s.unicodeScalars)
            raw.removeAll()
        }
        while let c = peek {
            i += 1
            if c == UInt8(ascii: "\"") {
                try flush()
                return String(scalars)
            }
            guard c == UInt8(ascii: "\\") else {
                raw.append(c)
                continue
            }
            try flush()
            guard let e = peek else { break }
            i += 1
            switch e {
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "u"):
                var unit = try hex4()
                if (0xD800..<0xDC00).contains(unit) {
                    try expect("\\u")
                    let low = try hex4()
                    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(unit) else { throw error("escape") }
                scalars.append(scalar)
            default: scalars.append(Unicode.Scalar(e))
            }
        }
        throw error("unterminated string")
    }

    private mutating func hex4() throws -> UInt32 {
        guard text.count - i >= 4 else { throw error("\\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let d = Self.hexValue(text[i]) else { throw error("\\u escape") }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }
}

/// Decimal arithmetic on digit strings, so big integers are checked without the code under test.
enum DecimalText {
    /// The big-endian unsigned integer in `bytes`, in decimal.
    static func fromBigEndian(_ bytes: [UInt8]) -> String {
        var digits: [UInt8] = [0]  // little-endian base-10
        for byte in bytes {
            var carry = Int(byte)
            for k in digits.indices {
                let v = Int(digits[k]) * 256 + carry
                digits[k] = UInt8(v % 10)
                carry = v / 10
            }
            while carry > 0 {
                digits.append(UInt8(carry % 10))
                carry /= 10
            }
        }
        while digits.count > 1, digits.last == 0 { digits.removeLast() }
        return String(digits.reversed().map { Character(String($0)) })
    }

    static func fromUInt64(_ n: UInt64) -> String {
        fromBigEndian(withUnsafeBytes(of: n.bigEndian, Array.init))
    }

    /// `n + 1`, for CBOR's negative integers `-1 - n`.
    static func plusOne(_ decimal: String) -> String {
        var digits = Array(decimal.utf8.reversed()).map { $0 - UInt8(ascii: "0") }
        var k = 0
        while true {
            if k == digits.count {
                digits.append(1)
                break
            }
            if digits[k] == 9 {
                digits[k] = 0
                k += 1
            } else {
                digits[k] += 1
                break
            }
        }
        return String(digits.reversed().map { Character(String($0)) })
    }
}

extension Notation {
    /// Whether a decoded CBOR value is what this notation states.
    ///
    /// Bignums (tags 2 and 3) match the integers they stand for, as JSON and Python show them;
    /// maps match regardless of entry order; every NaN matches `NaN`; Python datetimes match
    /// tag 0 or tag 1 items for the same instant.
    func matches(_ value: CBORValue) -> Bool {
        switch (self, value) {
        case (.integer(false, let m), .unsigned(let n)):
            return m == DecimalText.fromUInt64(n)
        case (.integer(true, let m), .negative(let n)):
            return m == DecimalText.plusOne(DecimalText.fromUInt64(n))
        case (.integer(false, let m), .tagged(2, .byteString(let b))):
            return m == DecimalText.fromBigEndian(b)
        case (.integer(true, let m), .tagged(3, .byteString(let b))):
            return m == DecimalText.plusOne(DecimalText.fromBigEndian(b))
        case (.float(let d), .float(let x)):
            return d.isNaN ? x.isNaN : d.bitPattern == x.bitPattern
        case (.bytes(let a), .byteString(let b)):
            return a == b
        case (.text(let a), .textString(let b)):
            return a == b
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.matches($1) }
        case (.map(let pairs), .map(let map)):
            return pairs.count == map.count
                && pairs.allSatisfy { pair in
                    map.entries.contains { pair.key.matches($0.key) && pair.value.matches($0.value) }
                }
        case (.tag(let t, let inner), .tagged(let u, let item)):
            return t == u && inner.matches(item)
        case (.simple(let a), .simple(let b)):
            return a == Int(b)
        case (.bool(let a), .boolean(let b)):
            return a == b
        case (.null, .null), (.undefined, .undefined):
            return true
        case (.dateTime(let fields), .tagged(1, let seconds)):
            return Self.epochSeconds(fields).map { Notation.float($0).matchesNumber(seconds) } ?? false
        case (.dateTime(let fields), .tagged(0, .textString(let text))):
            return Self.dateFields(rfc3339: text) == fields
        default:
            return false
        }
    }

    private func matchesNumber(_ value: CBORValue) -> Bool {
        guard case .float(let expected) = self else { return false }
        switch value {
        case .unsigned(let n): return Double(n) == expected
        case .negative(let n): return -1 - Double(n) == expected
        case .float(let d): return d == expected
        default: return false
        }
    }

    /// Seconds since 1970 for [y, m, d, H, M, S?, µs?] in UTC (days-from-civil, proleptic Gregorian).
    static func epochSeconds(_ f: [Int]) -> Double? {
        guard f.count >= 5 else { return nil }
        let (y0, m, d) = (f[0], f[1], f[2])
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146097 + doe - 719468
        let seconds = days * 86400 + f[3] * 3600 + f[4] * 60 + (f.count > 5 ? f[5] : 0)
        return Double(seconds) + (f.count > 6 ? Double(f[6]) / 1e6 : 0)
    }

    /// [y, m, d, H, M] (and S when not zero) of "YYYY-MM-DDTHH:MM:SSZ".
    static func dateFields(rfc3339 text: String) -> [Int]? {
        let parts = text.split(whereSeparator: { "-T:Z".contains($0) }).compactMap { Int($0) }
        guard parts.count == 6 else { return nil }
        return parts[5] == 0 ? Array(parts.prefix(5)) : parts
    }
}

/// Hex conversion for vectors (not the module's: the tests check the module).
enum Hex {
    static func bytes(_ hex: String) -> [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var k = 0
        while k < utf8.count {
            guard let h = NotationParser.hexValue(utf8[k]), let l = NotationParser.hexValue(utf8[k + 1])
            else {
                return nil
            }
            out.append(h << 4 | l)
            k += 2
        }
        return out
    }
}
