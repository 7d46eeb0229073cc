/// A JSON value with ordered object members, so that a document (the CLI's `--json` output,
/// a decoded structure, a fleet row) keeps a stable, documented field order.
public enum JSONValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral
{
    /// An object, its members in order.
    case object([(String, JSONValue)])
    /// An array.
    case array([JSONValue])
    /// A string.
    case string(String)
    /// An integer.
    case integer(Int64)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null
    /// JSON text produced elsewhere (CBOR's JSON rendering), inserted as it is.
    case raw(String)

    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer.
    public init(integerLiteral value: Int) { self = .integer(Int64(value)) }
    /// A boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }

    /// Equal when their serialized texts are.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.text() == rhs.text() }

    /// An integer that may not fit Int64 (CBOR unsigned values).
    public static func unsigned(_ value: UInt64) -> JSONValue { .raw(String(value)) }

    /// A CBOR value rendered as JSON, byte strings in `style`.
    public static func cbor(_ value: CBORValue, bytes style: CBORValue.JSONOptions.ByteStringStyle) -> JSONValue {
        .raw(value.jsonText(options: .init(byteStrings: style)))
    }

    /// Builds an object leaving out members whose value is nil.
    public static func members(_ pairs: [(String, JSONValue?)]) -> JSONValue {
        .object(pairs.compactMap { pair in pair.1.map { (pair.0, $0) } })
    }

    /// Serialized text, pretty-printed with two-space indentation when `pretty`.
    public func text(pretty: Bool = false) -> String {
        var out = ""
        write(to: &out, pretty: pretty, level: 0)
        return out
    }

    private func write(to out: inout String, pretty: Bool, level: Int) {
        let newline = pretty ? "\n" + String(repeating: "  ", count: level + 1) : ""
        let close = pretty ? "\n" + String(repeating: "  ", count: level) : ""
        switch self {
        case .object(let members):
            if members.isEmpty {
                out += "{}"
                return
            }
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                out += newline
                out += Self.quote(member.0)
                out += pretty ? ": " : ":"
                member.1.write(to: &out, pretty: pretty, level: level + 1)
            }
            out += close + "}"
        case .array(let items):
            if items.isEmpty {
                out += "[]"
                return
            }
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                out += newline
                item.write(to: &out, pretty: pretty, level: level + 1)
            }
            out += close + "]"
        case .string(let s): out += Self.quote(s)
        case .integer(let n): out += String(n)
        case .bool(let b): out += b ? "true" : "false"
        case .null: out += "null"
        case .raw(let text): out += text
        }
    }

    /// RFC 8259 §7 string escaping.
    public static func quote(_ s: String) -> String { JSONText.quoted(s) }
}
