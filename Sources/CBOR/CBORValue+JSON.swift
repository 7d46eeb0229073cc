import _SecurityKeyInternals

/// A JSON rendering of CBOR for command-line output (RFC 8259 text; not RFC 8949 §6.1's
/// lossy conversion, nor a format meant to be read back).
extension CBORValue {
    /// How ``CBORValue/jsonText(options:)`` writes what JSON has no type for.
    public struct JSONOptions: Sendable, Hashable {
        /// How byte strings are written.
        public struct ByteStringStyle: RawRepresentable, Sendable, Hashable {
            /// The style's name.
            public var rawValue: String
            /// Creates a style from its name.
            public init(rawValue: String) { self.rawValue = rawValue }

            /// base64url without padding (RFC 4648 §5), as WebAuthn writes binary fields.
            public static let base64URL = ByteStringStyle(rawValue: "base64url")
            /// Lowercase hexadecimal.
            public static let hex = ByteStringStyle(rawValue: "hex")
        }

        /// How byte strings are written (a JSON string either way).
        public var byteStrings: ByteStringStyle
        /// Spaces per nesting level, or nil for a single line.
        public var indent: Int?

        /// Creates options.
        public init(byteStrings: ByteStringStyle = .base64URL, indent: Int? = nil) {
            self.byteStrings = byteStrings
            self.indent = indent
        }
    }

    /// The value as JSON text.
    ///
    /// Integers are JSON numbers over the full CBOR range; finite floats are numbers, and
    /// `NaN`, `Infinity`, `-Infinity` become those strings. Byte strings become strings in the
    /// chosen style. Map keys become strings: text keys as they are, integer keys in decimal,
    /// other keys in diagnostic notation; two keys may then collide (`1` and `"1"`), and both
    /// are written. A tag becomes `{"tag": N, "value": …}`; `undefined` and other simple values
    /// become their diagnostic text as a string.
    public func jsonText(options: JSONOptions = JSONOptions()) -> String {
        var out = ""
        writeJSON(to: &out, options: options, level: 0)
        return out
    }

    func writeJSON(to out: inout String, options: JSONOptions, level: Int) {
        switch self {
        case .unsigned(let n):
            out += String(n)
        case .negative(let n):
            out += Self.negativeDecimal(n)
        case .byteString(let bytes):
            out += "\""
            if options.byteStrings == .hex {
                Self.appendHex(bytes, to: &out)
            } else {
                out += Base64URL.encode(bytes)
            }
            out += "\""
        case .textString(let text):
            Self.appendQuoted(text, to: &out)
        case .array(let items):
            Self.writeJSONContainer(
                open: "[", close: "]", count: items.count, to: &out, options: options, level: level
            ) { i, out in
                items[i].writeJSON(to: &out, options: options, level: level + 1)
            }
        case .map(let map):
            let entries = map.entries
            Self.writeJSONContainer(
                open: "{", close: "}", count: entries.count, to: &out, options: options, level: level
            ) { i, out in
                Self.appendQuoted(entries[i].key.jsonKey, to: &out)
                out += options.indent == nil ? ":" : ": "
                entries[i].value.writeJSON(to: &out, options: options, level: level + 1)
            }
        case .tagged(let tag, let item):
            let wrapper = CBORMap(entries: [
                .init(key: "tag", value: .unsigned(tag)), .init(key: "value", value: item),
            ])
            CBORValue.map(wrapper).writeJSON(to: &out, options: options, level: level)
        case .boolean(let b):
            out += b ? "true" : "false"
        case .null:
            out += "null"
        case .undefined, .simple:
            Self.appendQuoted(diagnosticNotation, to: &out)
        case .float(let d):
            if let text = Self.floatText(d) {
                out += text
            } else {
                Self.appendQuoted(diagnosticNotation, to: &out)
            }
        }
    }

    /// The string a map key becomes in JSON.
    var jsonKey: String {
        switch self {
        case .textString(let text): text
        case .unsigned(let n): String(n)
        case .negative(let n): Self.negativeDecimal(n)
        default: diagnosticNotation
        }
    }

    static func writeJSONContainer(
        open: String, close: String, count: Int, to out: inout String, options: JSONOptions, level: Int,
        element: (Int, inout String) -> Void
    ) {
        out += open
        guard count > 0 else {
            out += close
            return
        }
        let newline: (Int) -> String = { depth in
            guard let indent = options.indent else { return "" }
            return "\n" + String(repeating: " ", count: indent * depth)
        }
        for i in 0..<count {
            if i > 0 { out += "," }
            out += newline(level + 1)
            element(i, &out)
        }
        out += newline(level)
        out += close
    }
}
