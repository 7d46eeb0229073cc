import _SecurityKeyInternals

/// RFC 8949 §8 diagnostic notation, for people and for tests.
extension CBORValue: CustomStringConvertible {
    /// The value in RFC 8949 §8 diagnostic notation, for example `{1: h'0102', "a": [-1, 1.5]}`.
    ///
    /// Integers are decimal over the full range (`-18446744073709551616` included), byte
    /// strings `h'…'` in lowercase hex, text strings quoted with JSON escapes for `"`, `\` and
    /// control characters, floats with a decimal point or exponent (`1.0`, `1e+300`) or as
    /// `Infinity`, `-Infinity`, `NaN`, tags as `N(item)`, other simple values as `simple(N)`.
    /// Indefinite lengths are not shown: the value model does not keep them.
    public var diagnosticNotation: String {
        var out = ""
        writeDiagnostic(to: &out)
        return out
    }

    /// The diagnostic notation (``diagnosticNotation``).
    public var description: String { diagnosticNotation }

    func writeDiagnostic(to out: inout String) {
        switch self {
        case .unsigned(let n):
            out += String(n)
        case .negative(let n):
            out += Self.negativeDecimal(n)
        case .byteString(let bytes):
            out += "h'"
            Self.appendHex(bytes, to: &out)
            out += "'"
        case .textString(let text):
            Self.appendQuoted(text, to: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += ", " }
                item.writeDiagnostic(to: &out)
            }
            out += "]"
        case .map(let map):
            out += "{"
            for (i, entry) in map.entries.enumerated() {
                if i > 0 { out += ", " }
                entry.key.writeDiagnostic(to: &out)
                out += ": "
                entry.value.writeDiagnostic(to: &out)
            }
            out += "}"
        case .tagged(let tag, let item):
            out += String(tag)
            out += "("
            item.writeDiagnostic(to: &out)
            out += ")"
        case .boolean(let b):
            out += b ? "true" : "false"
        case .null:
            out += "null"
        case .undefined:
            out += "undefined"
        case .simple(let v):
            out += "simple(\(v))"
        case .float(let d):
            out += Self.floatText(d) ?? (d.isNaN ? "NaN" : d < 0 ? "-Infinity" : "Infinity")
        }
    }

    /// `-1 - n` in decimal, which for `n == UInt64.max` is one below `Int64`'s and `UInt64`'s range.
    static func negativeDecimal(_ n: UInt64) -> String {
        n == .max ? "-18446744073709551616" : "-" + String(n + 1)
    }

    /// A finite float in decimal, always with a decimal point or an exponent; nil otherwise.
    static func floatText(_ d: Double) -> String? {
        guard d.isFinite else { return nil }
        // Swift prints the shortest text that reads back as the same double: "1.0", "1e+300".
        return d.description
    }

    static func appendHex(_ bytes: [UInt8], to out: inout String) {
        out += Hex.encode(bytes)
    }

    /// A double-quoted string with JSON escapes (RFC 8259 §7), valid in both EDN and JSON.
    static func appendQuoted(_ text: String, to out: inout String) {
        out += JSONText.quoted(text)
    }
}
