import CBOR
import Foundation
import Testing

/// Limits, the CTAP2 profile's rules and the text renderings, case by case.
@Suite struct CodecTests {
    static let strict = CBORDecoder(options: .ctap2)
    static let lenient = CBORDecoder(options: .lenient)

    static func code(_ bytes: [UInt8], _ decoder: CBORDecoder) -> CBORError.Code? {
        do {
            _ = try decoder.decode(bytes)
            return nil
        } catch {
            return error.code
        }
    }

    // MARK: Limits

    @Test func tenThousandNestedArraysGiveAnError() {
        let bytes = [UInt8](repeating: 0x81, count: 10_000) + [0x00]
        for options in [
            CBORDecoder.Options.ctap2, .lenient, .init(maxDepth: 10_000, requireCanonical: false),
        ] {
            #expect(Self.code(bytes, CBORDecoder(options: options)) == .depthExceeded)
        }
    }

    @Test func deepMapsTagsAndIndefiniteArraysGiveAnError() {
        let maps = [UInt8](repeating: 0xA1, count: 10_000) + [0x00]
        let nestedMaps = Array([[UInt8]](repeating: [0xA1, 0x00], count: 5_000).joined()) + [0x00]
        let tags = Array([[UInt8]](repeating: [0xD8, 0x64], count: 10_000).joined()) + [0x00]
        let indefinite = [UInt8](repeating: 0x9F, count: 10_000)
        #expect(Self.code(maps, Self.lenient) == .depthExceeded)
        #expect(Self.code(nestedMaps, Self.lenient) == .depthExceeded)
        #expect(Self.code(tags, Self.lenient) == .depthExceeded)
        #expect(Self.code(tags, Self.strict) == .tagNotAllowed)
        #expect(Self.code(indefinite, Self.lenient) == .depthExceeded)
        #expect(Self.code(indefinite, Self.strict) == .indefiniteLength)
    }

    @Test func maxDepthIsTheDeepestNestingAccepted() throws {
        for depth in [1, 5, 32, CBORDecoder.Options.depthCeiling] {
            let decoder = CBORDecoder(options: .init(maxDepth: depth))
            let fits = [UInt8](repeating: 0x81, count: depth) + [0x00]
            let deeper = [UInt8](repeating: 0x81, count: depth + 1) + [0x00]
            _ = try decoder.decode(fits)
            #expect(Self.code(deeper, decoder) == .depthExceeded)
        }
        #expect(CBORDecoder.Options(maxDepth: 1_000_000).maxDepth == CBORDecoder.Options.depthCeiling)
        #expect(CBORDecoder.Options(maxDepth: -3).maxDepth == 0)
        #expect(Self.code([0x80], CBORDecoder(options: .init(maxDepth: 0))) == .depthExceeded)
    }

    @Test(
        arguments: [
            [0x5B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x7B, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x61],
            [0x9B, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00],
            [0xBB, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
            [0x9A, 0x00, 0x10, 0x00, 0x00] + [UInt8](repeating: 0, count: 100),
            [0xA2, 0x00, 0x00, 0x01],
            [0x5F, 0x5A, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0xFF],
        ] as [[UInt8]])
    func declaredLengthBeyondTheInputIsAnError(_ bytes: [UInt8]) {
        #expect(Self.code(bytes, Self.lenient) == .lengthExceedsInput)
    }

    @Test func inputSizeIsCapped() throws {
        let decoder = CBORDecoder(options: .init(maxInputSize: 4))
        #expect(try decoder.decode([0x43, 1, 2, 3]) == .byteString([1, 2, 3]))
        #expect(Self.code([0x44, 1, 2, 3, 4], decoder) == .inputTooLarge)
        #expect(throws: CBORError.self) { try decoder.decodeSequence([1, 2, 3, 4, 5]) }
    }

    @Test func trailingBytesAndSequences() throws {
        let error = #expect(throws: CBORError.self) { try Self.strict.decode([0x01, 0x02]) }
        #expect(error?.code == .trailingBytes)
        #expect(error?.offset == 1)
        #expect(try Self.strict.decodeSequence([0x01, 0x20, 0x80]) == [1, -1, []])
        #expect(try Self.strict.decodeSequence([]) == [])
        let (value, end) = try Self.strict.decodePrefix([0x82, 0x01, 0x02, 0xFF][...])
        #expect(value == [1, 2])
        #expect(end == 3)
    }

    // MARK: The CTAP2 profile (CTAP 2.1 §8)

    /// Lower major type first, then the shorter encoding, then bytewise: 24 (1818) and 1000
    /// (1903e8) before -1 (20), before h'00' (4100), before "a" (6161).
    @Test func mapKeysSortByMajorTypeThenLengthThenBytes() throws {
        let map: CBORMap = ["a": 0, .byteString([0]): 0, -1: 0, 1000: 0, 24: 0]
        let expected: [UInt8] = [
            0xA5, 0x18, 0x18, 0x00, 0x19, 0x03, 0xE8, 0x00, 0x20, 0x00, 0x41, 0x00, 0x00, 0x61, 0x61, 0x00,
        ]
        #expect(CBOREncoder.encode(.map(map)) == expected)
        #expect(try Self.strict.decode(expected) == .map(map))
        // Length first (RFC 7049 §3.9) would put -1 before 24: not CTAP2's order.
        let lengthFirst: [UInt8] = [0xA2, 0x20, 0x00, 0x18, 0x18, 0x00]
        #expect(Self.code(lengthFirst, Self.strict) == .mapKeyOrder)
        #expect(try Self.lenient.decode(lengthFirst) == .map([-1: 0, 24: 0]))
    }

    @Test func duplicateKeysAreRejectedInBothModes() throws {
        let same: [UInt8] = [0xA2, 0x01, 0x00, 0x01, 0x00]
        #expect(Self.code(same, Self.strict) == .duplicateMapKey)
        #expect(Self.code(same, Self.lenient) == .duplicateMapKey)
        // The same key spelled two ways is still the same key.
        let respelled: [UInt8] = [0xA2, 0x01, 0x00, 0x18, 0x01, 0x00]
        #expect(Self.code(respelled, Self.lenient) == .duplicateMapKey)
        #expect(Self.code(respelled, Self.strict) == .nonCanonicalEncoding)
        let error = #expect(throws: CBORError.self) { try Self.strict.decode(same) }
        #expect(error?.offset == 3)

        // Larger maps take another path in lenient mode: 40 keys 0...39, then 30 again as 181e.
        let distinct: [UInt8] = (0..<40).flatMap { (n: UInt64) -> [UInt8] in
            CBOREncoder.encode(.unsigned(n)) + [0xF6]
        }
        #expect(try Self.lenient.decode([0xB8, 40] + distinct).mapValue?.count == 40)
        let repeated: [UInt8] = [0xB8, 41] + distinct + [0x18, 0x1E, 0xF6]
        #expect(Self.code(repeated, Self.lenient) == .duplicateMapKey)
    }

    @Test func nonShortestFormsAreStrictErrorsAndLenientValues() throws {
        let cases: [([UInt8], CBORValue)] = [
            ([0x18, 0x17], 23), ([0x19, 0x00, 0xFF], 255), ([0x3A, 0x00, 0x00, 0xFF, 0xFF], -65536),
            ([0x58, 0x01, 0x07], .byteString([7])), ([0x79, 0x00, 0x01, 0x61], "a"),
            ([0x98, 0x01, 0x01], [1]), ([0xB9, 0x00, 0x01, 0x01, 0x02], .map([1: 2])),
            ([0xFA, 0x3F, 0xC0, 0x00, 0x00], .float(1.5)),
            ([0xFB, 0x3F, 0xF8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00], .float(1.5)),
            (
                [0xFB, 0x47, 0xEF, 0xFF, 0xFF, 0xE0, 0x00, 0x00, 0x00],
                .float(Double(Float.greatestFiniteMagnitude))
            ),
            ([0xF9, 0x7E, 0x01], .float(.nan)), ([0xF9, 0xFE, 0x00], .float(.nan)),
        ]
        for (bytes, value) in cases {
            #expect(Self.code(bytes, Self.strict) == .nonCanonicalEncoding, "\(bytes)")
            #expect(try Self.lenient.decode(bytes) == value)
        }
        #expect(Self.code([0x5F, 0x41, 0x01, 0xFF], Self.strict) == .indefiniteLength)
        #expect(Self.code([0xD8, 0x20, 0x60], Self.strict) == .tagNotAllowed)
    }

    @Test func textMustBeValidUTF8() {
        // A lone surrogate (U+D800 as three bytes), an overlong "/", a truncated sequence.
        for bytes: [UInt8] in [
            [0x63, 0xED, 0xA0, 0x80], [0x62, 0xC0, 0xAF], [0x61, 0xE6],
            [0x7F, 0x61, 0xE6, 0x62, 0xB0, 0xB4, 0xFF],
        ] {
            #expect(Self.code(bytes, Self.lenient) == .invalidUTF8, "\(bytes)")
        }
    }

    @Test func simpleValuesAndTagContents() throws {
        #expect(Self.code([0xF8, 0x1F], Self.lenient) == .invalidSimpleValue)
        #expect(try Self.lenient.decode([0xF8, 0x20]) == .simple(32))
        #expect(Self.code([0xC0, 0x01], Self.lenient) == .invalidTagContent)
        #expect(Self.code([0xC1, 0x60], Self.lenient) == .invalidTagContent)
        #expect(Self.code([0xC2, 0x01], Self.lenient) == .invalidTagContent)
        #expect(try Self.lenient.decode([0xC3, 0x40]) == .tagged(3, .byteString([])))
        #expect(Self.code([0xDF, 0x00], Self.lenient) == .reservedAdditionalInformation)
        #expect(Self.code([0x3F], Self.lenient) == .reservedAdditionalInformation)
    }

    // MARK: Values

    @Test func floatEqualityFollowsEncodings() {
        #expect(CBORValue.float(0.0) != .float(-0.0))
        #expect(CBORValue.float(.nan) == .float(-.nan))
        #expect(
            CBORValue.float(.nan).hashValue
                == CBORValue.float(Double(bitPattern: 0x7FF0_0000_0000_0001)).hashValue)
        #expect(CBORValue.float(1) != 1)
        #expect(CBOREncoder.encode(.float(-0.0)) == [0xF9, 0x80, 0x00])
        #expect(CBOREncoder.encode(.float(-.nan)) == [0xF9, 0x7E, 0x00])
        #expect(CBORValue.map([1: 2, 3: 4]) == .map([3: 4, 1: 2]))
    }

    @Test func integerRangeEnds() throws {
        #expect(try Self.strict.decode([0x3B] + [UInt8](repeating: 0xFF, count: 8)) == .negative(.max))
        #expect(CBORValue.negative(.max).intValue == nil)
        #expect(CBORValue.int(Int.min) == .negative(UInt64(Int.max)))
        #expect(CBORValue.int(Int.min).intValue == Int.min)
        #expect(CBORValue.negative(.max).description == "-18446744073709551616")
    }

    // MARK: Text renderings

    /// RFC 8259 §7 escapes, which RFC 8949 §8 uses for text strings.
    @Test func diagnosticEscapes() {
        let value: CBORValue = [
            "a\"\\\n\u{01}é\u{7F}", .byteString([0xAB, 0x01]), .simple(7), .undefined, .float(-.infinity),
        ]
        #expect(
            value.diagnosticNotation == #"["a\"\\\n\u0001é\u007f", h'ab01', simple(7), undefined, -Infinity]"#
        )
    }

    @Test func jsonRendering() throws {
        let map: CBORMap = [
            1: .byteString([0x00, 0x01, 0xFF]), "a": [-1, .float(1.5), .float(.nan), true, nil],
            -2: .undefined, .byteString([0x01]): .tagged(2, .byteString([0x01])),
        ]
        let value = CBORValue.map(map)
        // RFC 4648 §5: 00 01 ff is "AAH_", 01 is "AQ" (no padding).
        let compact = value.jsonText()
        #expect(
            compact
                == #"{"1":"AAH_","a":[-1,1.5,"NaN",true,null],"-2":"undefined","h'01'":{"tag":2,"value":"AQ"}}"#
        )
        #expect(value.jsonText(options: .init(byteStrings: .hex)).contains(#""1":"0001ff""#))
        let pretty = value.jsonText(options: .init(indent: 2))
        #expect(pretty.contains("\n  \"a\": [\n    -1,"))
        let parsedCompact = try JSONSerialization.jsonObject(with: Data(compact.utf8)) as? NSDictionary
        let parsedPretty = try JSONSerialization.jsonObject(with: Data(pretty.utf8)) as? NSDictionary
        #expect(parsedCompact != nil)
        #expect(parsedCompact == parsedPretty)
        #expect(CBORValue.array([]).jsonText(options: .init(indent: 2)) == "[]")
        #expect(CBORValue.negative(.max).jsonText() == "-18446744073709551616")
    }
}
