/// Reads CBOR, by default only in the CTAP2 canonical profile (CTAP 2.1 §8).
///
/// Every ill-formed input is rejected with a ``CBORError``. Limits are checked before any
/// allocation: nesting depth, total input size, and declared lengths against what is left of
/// the input. The decoder never traps.
public struct CBORDecoder: Sendable {
    /// Decoding limits and strictness.
    public struct Options: Sendable, Hashable {
        /// Deepest nesting of arrays, maps and tags accepted.
        public var maxDepth: Int
        /// Largest input accepted, in bytes.
        public var maxInputSize: Int
        /// When true, reject what CTAP2 forbids: indefinite lengths, non-shortest integer,
        /// length and float forms, and map keys out of canonical order. When false
        /// (lenient), accept any well-formed input; duplicate map keys are still rejected.
        public var requireCanonical: Bool

        /// Creates options.
        public init(maxDepth: Int = 32, maxInputSize: Int = 1 << 20, requireCanonical: Bool = true) {
            self.maxDepth = maxDepth
            self.maxInputSize = maxInputSize
            self.requireCanonical = requireCanonical
        }

        /// The CTAP2 canonical profile: what messages to and from an authenticator must be.
        public static let ctap2 = Options()
        /// Any well-formed CBOR (some real authenticators emit non-canonical responses).
        public static let lenient = Options(requireCanonical: false)
    }

    /// The options in force.
    public var options: Options

    /// Creates a decoder.
    public init(options: Options = .ctap2) {
        self.options = options
    }

    /// Decodes exactly one data item; trailing bytes are an error.
    public func decode(_ bytes: [UInt8]) throws(CBORError) -> CBORValue {
        let (value, end) = try decodePrefix(bytes[...])
        guard end == bytes.endIndex else {
            throw CBORError(.trailingBytes, at: end, "\(bytes.endIndex - end) bytes follow the CBOR item.")
        }
        return value
    }

    /// Decodes exactly one data item from a slice; trailing bytes are an error.
    public func decode(_ bytes: ArraySlice<UInt8>) throws(CBORError) -> CBORValue {
        let (value, end) = try decodePrefix(bytes)
        guard end == bytes.endIndex else {
            throw CBORError(.trailingBytes, at: end, "\(bytes.endIndex - end) bytes follow the CBOR item.")
        }
        return value
    }

    /// Decodes the first data item of `bytes` and returns it with the index just past it.
    public func decodePrefix(_ bytes: ArraySlice<UInt8>) throws(CBORError) -> (CBORValue, Int) {
        guard bytes.count <= options.maxInputSize else {
            throw CBORError(
                .inputTooLarge, at: bytes.startIndex,
                "The input is \(bytes.count) bytes; at most \(options.maxInputSize) are accepted.")
        }
        var reader = Reader(bytes: bytes, options: options)
        let value = try reader.readItem(depth: 0)
        return (value, reader.position)
    }

    /// Decodes a CBOR sequence (RFC 8742): zero or more items back to back.
    public func decodeSequence(_ bytes: [UInt8]) throws(CBORError) -> [CBORValue] {
        var items: [CBORValue] = []
        var rest = bytes[...]
        while !rest.isEmpty {
            let (value, end) = try decodePrefix(rest)
            items.append(value)
            rest = bytes[end...]
        }
        return items
    }
}

extension CBORDecoder {
    struct Head {
        var major: UInt8
        var additional: UInt8
        /// nil for additional information 31 (indefinite length or break).
        var argument: UInt64?
        var offset: Int
    }

    struct Reader {
        let bytes: ArraySlice<UInt8>
        let options: Options
        var position: Int

        init(bytes: ArraySlice<UInt8>, options: Options) {
            self.bytes = bytes
            self.options = options
            self.position = bytes.startIndex
        }

        var remaining: Int { bytes.endIndex - position }

        mutating func readByte() throws(CBORError) -> UInt8 {
            guard position < bytes.endIndex else {
                throw CBORError(.truncated, at: position, "The input ends in the middle of a CBOR item.")
            }
            let b = bytes[position]
            position += 1
            return b
        }

        mutating func readUInt(_ count: Int) throws(CBORError) -> UInt64 {
            guard remaining >= count else {
                throw CBORError(.truncated, at: position, "The input ends in the middle of a CBOR item.")
            }
            var v: UInt64 = 0
            for i in 0..<count { v = v << 8 | UInt64(bytes[position + i]) }
            position += count
            return v
        }

        mutating func readHead() throws(CBORError) -> Head {
            let offset = position
            let initial = try readByte()
            let major = initial >> 5
            let additional = initial & 0x1F
            let argument: UInt64?
            switch additional {
            case 0..<24: argument = UInt64(additional)
            case 24: argument = try readUInt(1)
            case 25: argument = try readUInt(2)
            case 26: argument = try readUInt(4)
            case 27: argument = try readUInt(8)
            case 31: argument = nil
            default:
                throw CBORError(
                    .reservedAdditionalInformation, at: offset,
                    "Additional information \(additional) is reserved in CBOR.")
            }
            if options.requireCanonical, major != 7, let n = argument, additional >= 24 {
                let shortest: Bool
                switch additional {
                case 24: shortest = n >= 24
                case 25: shortest = n > 0xFF
                case 26: shortest = n > 0xFFFF
                default: shortest = n > 0xFFFF_FFFF
                }
                guard shortest else {
                    throw CBORError(
                        .nonCanonicalEncoding, at: offset,
                        "An integer or length is not in its shortest form, which CTAP2 requires.")
                }
            }
            return Head(major: major, additional: additional, argument: argument, offset: offset)
        }

        /// A definite length that must fit in what is left of the input, `unit` bytes per element.
        func checkedLength(_ n: UInt64, unit: Int, at offset: Int) throws(CBORError) -> Int {
            guard n <= UInt64(remaining / unit) else {
                throw CBORError(
                    .lengthExceedsInput, at: offset,
                    "A CBOR item declares \(n) elements but only \(remaining) bytes remain.")
            }
            return Int(n)
        }

        mutating func readItem(depth: Int) throws(CBORError) -> CBORValue {
            let head = try readHead()
            return try readItem(head: head, depth: depth)
        }

        mutating func readItem(head: Head, depth: Int) throws(CBORError) -> CBORValue {
            switch head.major {
            case 0, 1:
                guard let n = head.argument else {
                    throw CBORError(
                        .reservedAdditionalInformation, at: head.offset,
                        "An integer cannot have an indefinite length.")
                }
                return head.major == 0 ? .unsigned(n) : .negative(n)
            case 2, 3:
                let bytes: [UInt8]
                if let n = head.argument {
                    let count = try checkedLength(n, unit: 1, at: head.offset)
                    bytes = Array(self.bytes[position..<(position + count)])
                    position += count
                } else {
                    bytes = try readChunks(major: head.major, at: head.offset)
                }
                if head.major == 2 { return .byteString(bytes) }
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw CBORError(.invalidUTF8, at: head.offset, "A CBOR text string is not valid UTF-8.")
                }
                return .textString(text)
            case 4:
                try checkDepth(depth, at: head.offset)
                var items: [CBORValue] = []
                if let n = head.argument {
                    let count = try checkedLength(n, unit: 1, at: head.offset)
                    items.reserveCapacity(count)
                    for _ in 0..<count { items.append(try readItem(depth: depth + 1)) }
                } else {
                    try rejectIndefiniteIfStrict(at: head.offset)
                    while true {
                        let next = try readHead()
                        if next.major == 7 && next.additional == 31 { break }
                        items.append(try readItem(head: next, depth: depth + 1))
                    }
                }
                return .array(items)
            case 5:
                try checkDepth(depth, at: head.offset)
                return .map(try readMap(head: head, depth: depth))
            case 6:
                try checkDepth(depth, at: head.offset)
                guard let tag = head.argument else {
                    throw CBORError(
                        .reservedAdditionalInformation, at: head.offset, "A tag cannot have an indefinite length.")
                }
                return .tagged(tag, try readItem(depth: depth + 1))
            default:
                return try readSimple(head: head)
            }
        }

        func checkDepth(_ depth: Int, at offset: Int) throws(CBORError) {
            guard depth < options.maxDepth else {
                throw CBORError(
                    .depthExceeded, at: offset, "CBOR nesting is deeper than \(options.maxDepth) levels.")
            }
        }

        func rejectIndefiniteIfStrict(at offset: Int) throws(CBORError) {
            if options.requireCanonical {
                throw CBORError(
                    .indefiniteLength, at: offset, "CTAP2 forbids indefinite-length CBOR items.")
            }
        }

        mutating func readChunks(major: UInt8, at offset: Int) throws(CBORError) -> [UInt8] {
            try rejectIndefiniteIfStrict(at: offset)
            var out: [UInt8] = []
            while true {
                let chunk = try readHead()
                if chunk.major == 7 && chunk.additional == 31 { return out }
                guard chunk.major == major, let n = chunk.argument else {
                    throw CBORError(
                        .invalidChunk, at: chunk.offset,
                        "A chunk of an indefinite-length string must be a definite string of the same type.")
                }
                let count = try checkedLength(n, unit: 1, at: chunk.offset)
                if major == 3 {
                    // Each chunk must be valid UTF-8 on its own (RFC 8949 §3.2.3).
                    guard String(validating: bytes[position..<(position + count)], as: UTF8.self) != nil else {
                        throw CBORError(.invalidUTF8, at: chunk.offset, "A CBOR text string is not valid UTF-8.")
                    }
                }
                out.append(contentsOf: bytes[position..<(position + count)])
                position += count
            }
        }

        mutating func readMap(head: Head, depth: Int) throws(CBORError) -> CBORMap {
            var entries: [CBORMap.Entry] = []
            var seen = Set<CBORValue>()
            var previousKey: ArraySlice<UInt8>?
            var count: Int?
            if let n = head.argument {
                count = try checkedLength(n, unit: 2, at: head.offset)
                entries.reserveCapacity(count ?? 0)
            } else {
                try rejectIndefiniteIfStrict(at: head.offset)
            }
            var index = 0
            while count.map({ index < $0 }) ?? true {
                let keyStart = position
                let keyHead = try readHead()
                if count == nil && keyHead.major == 7 && keyHead.additional == 31 { break }
                let key = try readItem(head: keyHead, depth: depth + 1)
                let keyBytes = bytes[keyStart..<position]
                if options.requireCanonical, let previous = previousKey {
                    if previous == keyBytes {
                        throw CBORError(.duplicateMapKey, at: keyStart, "A CBOR map has the same key twice.")
                    }
                    guard CBOREncoder.canonicalOrder(previous, keyBytes) else {
                        throw CBORError(
                            .mapKeyOrder, at: keyStart, "CBOR map keys are not in CTAP2 canonical order.")
                    }
                }
                guard seen.insert(key).inserted else {
                    throw CBORError(.duplicateMapKey, at: keyStart, "A CBOR map has the same key twice.")
                }
                previousKey = keyBytes
                let value = try readItem(depth: depth + 1)
                entries.append(CBORMap.Entry(key: key, value: value))
                index += 1
            }
            return CBORMap(entries: entries)
        }

        mutating func readSimple(head: Head) throws(CBORError) -> CBORValue {
            switch head.additional {
            case 0..<20: return .simple(head.additional)
            case 20: return .boolean(false)
            case 21: return .boolean(true)
            case 22: return .null
            case 23: return .undefined
            case 24:
                let v = UInt8(head.argument ?? 0)
                guard v >= 32 else {
                    throw CBORError(
                        .invalidSimpleValue, at: head.offset,
                        "A two-byte simple value must be 32 or more (RFC 8949 §3.3).")
                }
                return .simple(v)
            case 25:
                let bits = UInt16(head.argument ?? 0)
                return .float(HalfFloat.value(of: bits))
            case 26:
                let f = Float(bitPattern: UInt32(head.argument ?? 0))
                if options.requireCanonical, f.isNaN || HalfFloat.exactBits(of: f) != nil {
                    throw CBORError(
                        .nonCanonicalEncoding, at: head.offset,
                        "A single-precision float fits in half precision, which CTAP2 requires.")
                }
                return .float(Double(f))
            case 27:
                let d = Double(bitPattern: head.argument ?? 0)
                if options.requireCanonical, d.isNaN || Double(Float(d)) == d {
                    throw CBORError(
                        .nonCanonicalEncoding, at: head.offset,
                        "A double-precision float fits in a shorter form, which CTAP2 requires.")
                }
                return .float(d)
            default:
                throw CBORError(.unexpectedBreak, at: head.offset, "A CBOR break appears outside an indefinite-length item.")
            }
        }
    }
}
