/// Reads CBOR (RFC 8949), by default only in the CTAP2 canonical profile (CTAP 2.1 §8
/// "Message Encoding").
///
/// Every input that is not well-formed is rejected with a ``CBORError``, in both modes, and so
/// are tags 0 to 3 whose content has the wrong type (RFC 8949 §3.4). Limits are checked before
/// any allocation: nesting depth, total input size, and declared lengths against what is left
/// of the input. The decoder never traps.
///
/// Strict mode (``Options/ctap2``) also rejects what CTAP2 forbids in messages and anything this
/// module's encoder would not write, so that a strictly decoded item re-encodes to exactly the
/// bytes it came from:
/// - indefinite lengths;
/// - integers, lengths and tags not in their shortest form;
/// - floats not in the shortest form that keeps their value, and NaN other than `f97e00`;
/// - map keys out of CTAP2 canonical order (``CBOREncoder/canonicalOrder(_:_:)``) or repeated;
/// - tags, which CTAP2 messages must not contain.
///
/// Lenient mode (``Options/lenient``) accepts any well-formed input, as some authenticators emit
/// non-shortest lengths; it still rejects duplicate map keys. Each caller picks one deliberately.
public struct CBORDecoder: Sendable {
    /// Decoding limits and strictness.
    public struct Options: Sendable, Hashable {
        /// The deepest nesting any options may ask for; larger values are lowered to this.
        ///
        /// The decoder recurses once per level, using up to 1.5 KiB of stack per level in an
        /// optimized build (measured on x86_64 Linux; several times that unoptimized), so this
        /// bounds its stack use to about 192 KiB. The default, 32, needs less than 64 KiB.
        public static let depthCeiling = 128

        /// Deepest nesting of arrays, maps and tags accepted (at most ``depthCeiling``).
        public var maxDepth: Int {
            get { storedMaxDepth }
            set { storedMaxDepth = min(max(newValue, 0), Self.depthCeiling) }
        }
        private var storedMaxDepth: Int
        /// Largest input accepted, in bytes.
        public var maxInputSize: Int
        /// When true, reject what CTAP2 forbids: indefinite lengths, non-shortest integer,
        /// length, tag and float forms, NaN other than `f97e00`, and map keys out of canonical
        /// order. When false (lenient), accept any well-formed input; duplicate map keys are
        /// rejected either way.
        public var requireCanonical: Bool
        /// Whether tagged items (major type 6) are accepted. CTAP2 messages contain none.
        public var allowTags: Bool

        /// Creates options. `allowTags` defaults to the opposite of `requireCanonical`.
        public init(
            maxDepth: Int = 32, maxInputSize: Int = 1 << 20, requireCanonical: Bool = true,
            allowTags: Bool? = nil
        ) {
            self.storedMaxDepth = min(max(maxDepth, 0), Self.depthCeiling)
            self.maxInputSize = maxInputSize
            self.requireCanonical = requireCanonical
            self.allowTags = allowTags ?? !requireCanonical
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
        try decode(bytes[...])
    }

    /// Decodes exactly one data item from a slice; trailing bytes are an error.
    ///
    /// Error offsets are indices of the slice (so of the array it was cut from).
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
        guard bytes.count <= options.maxInputSize else {
            throw CBORError(
                .inputTooLarge, at: 0,
                "The input is \(bytes.count) bytes; at most \(options.maxInputSize) are accepted.")
        }
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
    /// The first byte of an item and the argument that follows it (RFC 8949 §3).
    struct Head {
        var major: UInt8
        var additional: UInt8
        /// nil for additional information 31 (indefinite length or break).
        var argument: UInt64?
        var offset: Int

        var isBreak: Bool { major == 7 && additional == 31 }
    }

    /// Elements are appended one by one past this many, so a declared count costs no memory
    /// before its elements are actually read.
    static let reserveLimit = 64

    /// Lenient mode finds repeated keys by linear search in maps up to this size.
    static let linearKeySearchLimit = 16

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
            // Major type 7 uses 25...27 for floats, checked where they are read.
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

        /// A definite count that must fit in what is left of the input, `unit` bytes per element.
        func checkedLength(_ n: UInt64, unit: Int, at offset: Int) throws(CBORError) -> Int {
            guard n <= UInt64(remaining / unit) else {
                throw CBORError(
                    .lengthExceedsInput, at: offset,
                    "A CBOR item declares \(n) elements but only \(remaining) bytes remain.")
            }
            return Int(n)
        }

        /// The next `n` bytes, after checking that the input holds them.
        mutating func take(_ n: UInt64, at offset: Int) throws(CBORError) -> ArraySlice<UInt8> {
            let count = try checkedLength(n, unit: 1, at: offset)
            let slice = bytes[position..<(position + count)]
            position += count
            return slice
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
            case 2:
                if let n = head.argument {
                    return .byteString(Array(try take(n, at: head.offset)))
                }
                return .byteString(try readChunks(major: 2, at: head.offset))
            case 3:
                if let n = head.argument {
                    let utf8 = try take(n, at: head.offset)
                    return .textString(try Self.text(utf8, at: head.offset))
                }
                // Every chunk was checked on its own, and valid UTF-8 concatenates to valid UTF-8.
                let utf8 = try readChunks(major: 3, at: head.offset)
                return .textString(try Self.text(utf8[...], at: head.offset))
            case 4:
                try checkDepth(depth, at: head.offset)
                return .array(try readArray(head: head, depth: depth))
            case 5:
                try checkDepth(depth, at: head.offset)
                return .map(try readMap(head: head, depth: depth))
            case 6:
                return try readTagged(head: head, depth: depth)
            default:
                return try readSimple(head: head)
            }
        }

        static func text(_ utf8: ArraySlice<UInt8>, at offset: Int) throws(CBORError) -> String {
            // `String(validating:as:)` is generic and unspecialised in the standard library (it
            // looked up type metadata for every string: most of a getInfo reply's decoding time).
            // `String(decoding:as:)` from a buffer is its non-generic fast path; it replaces
            // invalid sequences with U+FFFD, so the text is valid exactly when its bytes are the
            // input's (a repaired string always differs from its input).
            let valid = utf8.withUnsafeBufferPointer { input -> String? in
                let text = String(decoding: input, as: UTF8.self)
                let same =
                    text.utf8.withContiguousStorageIfAvailable { sameBytes($0, input) }
                    ?? text.utf8.elementsEqual(input)
                return same ? text : nil
            }
            guard let valid else {
                throw CBORError(.invalidUTF8, at: offset, "A CBOR text string is not valid UTF-8.")
            }
            return valid
        }

        /// Whether two buffers hold the same bytes, compared eight at a time.
        static func sameBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
            guard a.count == b.count else { return false }
            let (x, y) = (UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b))
            var index = 0
            while index + 8 <= x.count {
                guard
                    x.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                        == y.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                else { return false }
                index += 8
            }
            while index < x.count {
                guard x[index] == y[index] else { return false }
                index += 1
            }
            return true
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

        /// The chunks of an indefinite-length byte or text string, concatenated (RFC 8949 §3.2.3).
        mutating func readChunks(major: UInt8, at offset: Int) throws(CBORError) -> [UInt8] {
            try rejectIndefiniteIfStrict(at: offset)
            var out: [UInt8] = []
            while true {
                let chunk = try readHead()
                if chunk.isBreak { return out }
                guard chunk.major == major, let n = chunk.argument else {
                    throw CBORError(
                        .invalidChunk, at: chunk.offset,
                        "A chunk of an indefinite-length string must be a definite string of the same type.")
                }
                let piece = try take(n, at: chunk.offset)
                // Each chunk must be valid UTF-8 on its own (RFC 8949 §3.2.3).
                if major == 3 { _ = try Self.text(piece, at: chunk.offset) }
                out.append(contentsOf: piece)
            }
        }

        mutating func readArray(head: Head, depth: Int) throws(CBORError) -> [CBORValue] {
            var items: [CBORValue] = []
            if let n = head.argument {
                let count = try checkedLength(n, unit: 1, at: head.offset)
                items.reserveCapacity(min(count, CBORDecoder.reserveLimit))
                for _ in 0..<count { items.append(try readItem(depth: depth + 1)) }
            } else {
                try rejectIndefiniteIfStrict(at: head.offset)
                while true {
                    let next = try readHead()
                    if next.isBreak { break }
                    items.append(try readItem(head: next, depth: depth + 1))
                }
            }
            return items
        }

        mutating func readMap(head: Head, depth: Int) throws(CBORError) -> CBORMap {
            var entries: [CBORMap.Entry] = []
            let declared: Int
            if let n = head.argument {
                declared = try checkedLength(n, unit: 2, at: head.offset)
                entries.reserveCapacity(min(declared, CBORDecoder.reserveLimit))
            } else {
                try rejectIndefiniteIfStrict(at: head.offset)
                declared = -1
            }
            // Strict mode proves keys distinct by their strictly increasing encodings; lenient
            // input may spell one key two ways (`01` and `1801`), so compare decoded values:
            // one by one in small maps, through a set once a map grows.
            var previousKey = 0..<0
            var seen: Set<CBORValue> = []
            while declared < 0 || entries.count < declared {
                let keyStart = position
                let keyHead = try readHead()
                if declared < 0 && keyHead.isBreak { break }
                let key = try readItem(head: keyHead, depth: depth + 1)
                if options.requireCanonical {
                    let keyBytes = keyStart..<position
                    if !entries.isEmpty {
                        let (previous, current) = (bytes[previousKey], bytes[keyBytes])
                        if previous.elementsEqual(current) {
                            throw CBORError(
                                .duplicateMapKey, at: keyStart, "A CBOR map has the same key twice.")
                        }
                        guard CBOREncoder.canonicalOrder(previous, current) else {
                            throw CBORError(
                                .mapKeyOrder, at: keyStart, "CBOR map keys are not in CTAP2 canonical order.")
                        }
                    }
                    previousKey = keyBytes
                } else {
                    let duplicate: Bool
                    if entries.count < CBORDecoder.linearKeySearchLimit {
                        duplicate = entries.contains { $0.key == key }
                    } else {
                        if seen.isEmpty { seen = Set(entries.map(\.key)) }
                        duplicate = !seen.insert(key).inserted
                    }
                    if duplicate {
                        throw CBORError(.duplicateMapKey, at: keyStart, "A CBOR map has the same key twice.")
                    }
                }
                let value = try readItem(depth: depth + 1)
                entries.append(CBORMap.Entry(key: key, value: value))
            }
            return CBORMap(entries: entries)
        }

        /// A tagged item; the content of tags 0 to 3 must have the type RFC 8949 §3.4 gives it.
        mutating func readTagged(head: Head, depth: Int) throws(CBORError) -> CBORValue {
            guard let tag = head.argument else {
                throw CBORError(
                    .reservedAdditionalInformation, at: head.offset, "A tag cannot have an indefinite length."
                )
            }
            guard options.allowTags else {
                throw CBORError(.tagNotAllowed, at: head.offset, "CTAP2 messages must not contain CBOR tags.")
            }
            try checkDepth(depth, at: head.offset)
            let content = try readItem(depth: depth + 1)
            let valid: Bool
            switch (tag, content) {
            case (0, .textString): valid = true
            case (0, _): valid = false
            case (1, .unsigned), (1, .negative), (1, .float): valid = true
            case (1, _): valid = false
            case (2, .byteString), (3, .byteString): valid = true
            case (2, _), (3, _): valid = false
            default: valid = true
            }
            guard valid else {
                throw CBORError(
                    .invalidTagContent, at: head.offset,
                    "The content of CBOR tag \(tag) has the wrong type (RFC 8949 §3.4).")
            }
            return .tagged(tag, content)
        }

        mutating func readSimple(head: Head) throws(CBORError) -> CBORValue {
            switch head.additional {
            case 0..<20: return .simple(head.additional)
            case 20: return .boolean(false)
            case 21: return .boolean(true)
            case 22: return .null
            case 23: return .undefined
            case 24:
                let v = UInt8(truncatingIfNeeded: head.argument ?? 0)
                guard v >= 32 else {
                    throw CBORError(
                        .invalidSimpleValue, at: head.offset,
                        "A two-byte simple value must be 32 or more (RFC 8949 §3.3).")
                }
                return .simple(v)
            case 25:
                let bits = UInt16(truncatingIfNeeded: head.argument ?? 0)
                let d = HalfFloat.value(of: bits)
                if options.requireCanonical, d.isNaN, bits != 0x7E00 {
                    throw CBORError(
                        .nonCanonicalEncoding, at: head.offset,
                        "A NaN is not encoded as f97e00, the only NaN this profile accepts.")
                }
                return .float(d)
            case 26:
                let f = Float(bitPattern: UInt32(truncatingIfNeeded: head.argument ?? 0))
                if options.requireCanonical, f.isNaN || HalfFloat.exactBits(of: f) != nil {
                    throw CBORError(
                        .nonCanonicalEncoding, at: head.offset,
                        "A single-precision float fits in half precision, which CTAP2 canonical form requires."
                    )
                }
                return .float(Double(f))
            case 27:
                let d = Double(bitPattern: head.argument ?? 0)
                if options.requireCanonical, d.isNaN || Double(Float(d)) == d {
                    throw CBORError(
                        .nonCanonicalEncoding, at: head.offset,
                        "A double-precision float fits in a shorter form, which CTAP2 canonical form requires."
                    )
                }
                return .float(d)
            default:
                throw CBORError(
                    .unexpectedBreak, at: head.offset,
                    "A CBOR break appears outside an indefinite-length item.")
            }
        }
    }
}
