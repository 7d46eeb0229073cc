/// A D-Bus value as this wrapper reads and writes it: the basic types, `a{sv}` dictionaries,
/// arrays of them and arrays of strings (D-Bus Specification, "Type System").
public indirect enum BusValue: Hashable, Sendable {
    /// `s`.
    case string(String)
    /// `o`.
    case objectPath(String)
    /// `b`.
    case bool(Bool)
    /// `i`.
    case int32(Int32)
    /// `u`.
    case uint32(UInt32)
    /// `x`.
    case int64(Int64)
    /// `t`.
    case uint64(UInt64)
    /// `a{sv}`: members in order, values of basic types (or string arrays).
    case dictionary([BusDictionaryEntry])
    /// `aa{sv}`.
    case dictionaries([[BusDictionaryEntry]])
    /// `as`.
    case strings([String])

    /// The D-Bus signature of this value.
    public var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .bool: "b"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .dictionary: "a{sv}"
        case .dictionaries: "aa{sv}"
        case .strings: "as"
        }
    }

    /// The string, for `s` and `o`.
    public var stringValue: String? {
        switch self {
        case .string(let s), .objectPath(let s): s
        default: nil
        }
    }
}

/// One `{sv}` entry of an `a{sv}` dictionary.
public struct BusDictionaryEntry: Hashable, Sendable {
    /// The key.
    public var key: String
    /// The variant's value.
    public var value: BusValue

    /// Creates an entry.
    public init(_ key: String, _ value: BusValue) {
        self.key = key
        self.value = value
    }
}

/// The one error type of the D-Bus wrapper: the sd-bus function that failed and its errno.
public struct BusError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The sd-bus function that failed.
    public var function: String
    /// The negative errno it returned, made positive.
    public var errno: Int32
    /// One sentence.
    public var message: String

    /// Creates an error.
    public init(function: String, errno: Int32, _ message: String) {
        self.function = function
        self.errno = errno
        self.message = message
    }

    public var description: String { message }
}
