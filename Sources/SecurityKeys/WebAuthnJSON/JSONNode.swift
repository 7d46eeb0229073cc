/// A parsed JSON value (RFC 8259), as the WebAuthn JSON options parser reads it: strict (no
/// duplicate member names, no trailing commas, no comments, UTF-8 only) and bounded (size,
/// depth, string length and element counts are capped before anything is allocated for them).
public indirect enum JSONNode: Hashable, Sendable {
    /// An object, members in document order.
    case object([(String, JSONNode)])
    /// An array.
    case array([JSONNode])
    /// A string.
    case string(String)
    /// A number, kept as its text so that integers are read exactly.
    case number(String)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null

    /// The JSON type name used in error messages.
    public var typeName: String {
        switch self {
        case .object: "object"
        case .array: "array"
        case .string: "string"
        case .number: "number"
        case .bool: "boolean"
        case .null: "null"
        }
    }

    public static func == (lhs: JSONNode, rhs: JSONNode) -> Bool {
        switch (lhs, rhs) {
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.array(let a), .array(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .object(let members):
            hasher.combine(0)
            for (name, value) in members {
                hasher.combine(name)
                hasher.combine(value)
            }
        case .array(let values): hasher.combine(values)
        case .string(let s): hasher.combine(s)
        case .number(let n): hasher.combine(n)
        case .bool(let b): hasher.combine(b)
        case .null: hasher.combine(5)
        }
    }
}

/// Limits on what the JSON parser accepts; each is checked before the input can make the
/// parser allocate past it.
public struct JSONLimits: Hashable, Sendable {
    /// The longest document, in bytes.
    public var maximumBytes: Int
    /// The deepest nesting of arrays and objects.
    public var maximumDepth: Int
    /// The longest string, in UTF-8 bytes.
    public var maximumStringBytes: Int
    /// The most elements of one array or members of one object.
    public var maximumElements: Int

    /// Creates limits.
    public init(maximumBytes: Int, maximumDepth: Int, maximumStringBytes: Int, maximumElements: Int) {
        self.maximumBytes = maximumBytes
        self.maximumDepth = maximumDepth
        self.maximumStringBytes = maximumStringBytes
        self.maximumElements = maximumElements
    }

    /// Generous for any real relying party's options: 256 KiB, depth 16, strings of 16 KiB,
    /// 1024 elements (WebAuthn's own nesting is 4 deep; credential IDs are at most 1023 bytes).
    public static let webAuthnOptions = JSONLimits(
        maximumBytes: 256 * 1024, maximumDepth: 16, maximumStringBytes: 16 * 1024, maximumElements: 1024)
}

/// Why JSON text or a WebAuthn JSON member was rejected; carried as the `underlying` error of a
/// ``SecurityKeyError`` with code ``SecurityKeyError/Code/invalidRequest``.
public struct WebAuthnJSONError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Stable reasons.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Not JSON text (syntax error, invalid UTF-8, duplicate member, trailing data).
        public static let malformed = Code(rawValue: "malformed-json")
        /// The document, a string or an array is longer than the limits allow.
        public static let tooLarge = Code(rawValue: "too-large")
        /// Arrays and objects nest deeper than the limits allow.
        public static let tooDeep = Code(rawValue: "too-deep")
        /// A member has the wrong JSON type.
        public static let wrongType = Code(rawValue: "wrong-type")
        /// A required member is absent.
        public static let missingMember = Code(rawValue: "missing-member")
        /// A member has the right type but a value WebAuthn does not allow (bad base64url,
        /// empty challenge, user ID over 64 bytes, ...).
        public static let invalidValue = Code(rawValue: "invalid-value")
        public var description: String { rawValue }
    }

    /// The reason.
    public var code: Code
    /// The member's path (`publicKey.user.id`, `excludeCredentials[2].id`), or the byte offset
    /// for syntax errors (`@17`).
    public var member: String
    /// One sentence.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, member: String, _ message: String) {
        self.code = code
        self.member = member
        self.message = message
    }

    public var description: String { message }

    /// Hashable and equal by code and member.
    public static func == (lhs: WebAuthnJSONError, rhs: WebAuthnJSONError) -> Bool {
        lhs.code == rhs.code && lhs.member == rhs.member
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(member)
    }
}

extension JSONNode {
    /// Parses `bytes` as one JSON value within `limits`.
    public static func parse(_ bytes: [UInt8], limits: JSONLimits = .webAuthnOptions)
        throws(WebAuthnJSONError) -> JSONNode
    {
        guard bytes.count <= limits.maximumBytes else {
            throw WebAuthnJSONError(
                .tooLarge, member: "",
                "The JSON is \(bytes.count) bytes; at most \(limits.maximumBytes) are accepted.")
        }
        var parser = JSONParser(bytes: bytes, limits: limits)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.position == bytes.count else {
            throw parser.syntax("Unexpected data after the JSON value")
        }
        return value
    }
}

/// A recursive-descent parser over UTF-8 bytes; recursion is bounded by `limits.maximumDepth`.
struct JSONParser {
    let bytes: [UInt8]
    let limits: JSONLimits
    var position = 0

    init(bytes: [UInt8], limits: JSONLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    func syntax(_ what: String) -> WebAuthnJSONError {
        WebAuthnJSONError(.malformed, member: "@\(position)", "\(what) at byte \(position) of the JSON.")
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    mutating func value(depth: Int) throws(WebAuthnJSONError) -> JSONNode {
        guard let byte = peek() else { throw syntax("The JSON ends where a value should be") }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw syntax("Unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(WebAuthnJSONError) {
        let expected = word.withUTF8Buffer { Array($0) }
        guard position + expected.count <= bytes.count,
            Array(bytes[position..<position + expected.count]) == expected
        else { throw syntax("Unexpected word") }
        position += expected.count
    }

    func checkDepth(_ depth: Int) throws(WebAuthnJSONError) {
        guard depth <= limits.maximumDepth else {
            throw WebAuthnJSONError(
                .tooDeep, member: "@\(position)",
                "The JSON nests deeper than \(limits.maximumDepth) levels (at byte \(position)).")
        }
    }

    func checkCount(_ count: Int) throws(WebAuthnJSONError) {
        guard count < limits.maximumElements else {
            throw WebAuthnJSONError(
                .tooLarge, member: "@\(position)",
                "An array or object in the JSON has more than \(limits.maximumElements) elements.")
        }
    }

    mutating func object(depth: Int) throws(WebAuthnJSONError) -> JSONNode {
        try checkDepth(depth)
        position += 1
        var members: [(String, JSONNode)] = []
        var names = Set<String>()
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw syntax("Expected a member name") }
            let name = try string()
            guard names.insert(name).inserted else { throw syntax("Duplicate member \"\(name)\"") }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw syntax("Expected ':'") }
            position += 1
            skipWhitespace()
            try checkCount(members.count)
            members.append((name, try value(depth: depth)))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                return .object(members)
            default: throw syntax("Expected ',' or '}'")
            }
        }
    }

    mutating func array(depth: Int) throws(WebAuthnJSONError) -> JSONNode {
        try checkDepth(depth)
        position += 1
        var values: [JSONNode] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            position += 1
            return .array(values)
        }
        while true {
            skipWhitespace()
            try checkCount(values.count)
            values.append(try value(depth: depth))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                return .array(values)
            default: throw syntax("Expected ',' or ']'")
            }
        }
    }

    mutating func number() throws(WebAuthnJSONError) -> String {
        let start = position
        func digits(_ p: inout Int, _ b: [UInt8]) -> Int {
            let s = p
            while p < b.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[p]) { p += 1 }
            return p - s
        }
        if peek() == UInt8(ascii: "-") { position += 1 }
        if peek() == UInt8(ascii: "0") {
            position += 1
        } else if digits(&position, bytes) == 0 {
            throw syntax("Expected digits")
        }
        if peek() == UInt8(ascii: ".") {
            position += 1
            guard digits(&position, bytes) > 0 else { throw syntax("Expected digits after '.'") }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard digits(&position, bytes) > 0 else { throw syntax("Expected exponent digits") }
        }
        guard position - start <= 64 else { throw syntax("A number is longer than 64 characters") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    mutating func hex4() throws(WebAuthnJSONError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw syntax("Truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[position]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw syntax("Bad \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    mutating func string() throws(WebAuthnJSONError) -> String {
        position += 1  // the opening quote
        var out: [UInt8] = []
        while true {
            guard out.count <= limits.maximumStringBytes else {
                throw WebAuthnJSONError(
                    .tooLarge, member: "@\(position)",
                    "A string in the JSON is longer than \(limits.maximumStringBytes) bytes.")
            }
            guard let c = peek() else { throw syntax("Unterminated string") }
            position += 1
            switch c {
            case UInt8(ascii: "\""):
                // Strict UTF-8: invalid sequences are an error, not replacement characters.
                guard let text = String(validating: out, as: UTF8.self) else {
                    throw syntax("A string is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                guard let e = peek() else { throw syntax("Unterminated escape") }
                position += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard peek() == UInt8(ascii: "\\"), position + 1 < bytes.count,
                            bytes[position + 1] == UInt8(ascii: "u")
                        else { throw syntax("Unpaired surrogate") }
                        position += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw syntax("Unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw syntax("Unpaired surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw syntax("Bad \\u escape") }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default: throw syntax("Unknown escape")
                }
            case 0x00..<0x20: throw syntax("Control character in a string")
            default: out.append(c)
            }
        }
    }
}
