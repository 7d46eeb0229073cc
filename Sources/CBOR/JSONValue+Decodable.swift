/// Any JSON document read with a `JSONDecoder` (FoundationEssentials), for the few places that
/// read JSON whose shape is checked member by member (clientDataJSON, a JWS header) rather than
/// decoded into a fixed type.
extension JSONValue: Decodable {
    /// The deepest nesting read; deeper documents are refused rather than recursed into.
    public static let maximumDecodingDepth = 64

    private struct MemberKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Reads any JSON value. Object members come sorted by name (a decoder does not keep their
    /// order); numbers that are not 64-bit integers are kept as their shortest text (`.raw`).
    public init(from decoder: any Decoder) throws {
        guard decoder.codingPath.count < Self.maximumDecodingDepth else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "JSON nested too deeply."))
        }
        if let object = try? decoder.container(keyedBy: MemberKey.self) {
            var members: [(String, JSONValue)] = []
            for key in object.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                members.append((key.stringValue, try object.decode(JSONValue.self, forKey: key)))
            }
            self = .object(members)
            return
        }
        if var array = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !array.isAtEnd { items.append(try array.decode(JSONValue.self)) }
            self = .array(items)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let bool = try? single.decode(Bool.self) {
            self = .bool(bool)
        } else if let integer = try? single.decode(Int64.self) {
            self = .integer(integer)
        } else if let number = try? single.decode(Double.self) {
            self = .raw(String(number))
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    /// The value of member `name` of an object (the first, should it repeat); nil for a
    /// missing member or a value that is not an object.
    public subscript(member name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == name }?.1
    }

    /// The string, when this is one.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The boolean, when this is one.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The items, when this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
