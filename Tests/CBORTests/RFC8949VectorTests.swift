import CBOR
import Testing

/// RFC 8949 Appendix A (cbor/test-vectors and cbor-wg/cbor-test-vectors), cbor-wg's spike
/// vectors and its not-well-formed inputs, against the values and texts their sources state.
@Suite struct RFC8949VectorTests {
    static let strict = CBORDecoder(options: .ctap2)
    static let lenient = CBORDecoder(options: .lenient)
    /// Canonical in every respect CTAP2 asks for, but accepting tags, as Appendix A uses them.
    static let strictWithTags = CBORDecoder(options: .init(requireCanonical: true, allowTags: true))

    static let appendixA = VectorFiles.rfc8949.filter { $0.isAppendixA }
    static let spike = VectorFiles.rfc8949.filter { $0.isSpike }
    static let bad = VectorFiles.rfc8949.filter { $0.mustFail }

    @Test func vectorFilesLoad() {
        // Counted in the JSON file: 82 + 81 Appendix A examples, 1165 spike items, 47 bad inputs.
        #expect(Self.appendixA.count == 82 + 81)
        #expect(Self.spike.count == 1165)
        #expect(Self.bad.count == 47)
    }

    /// RFC 7049 listed `f818` as simple(24); RFC 8949 §3.3 made two-byte simple values below 32
    /// not well-formed, and the cbor-wg Appendix A files dropped it.
    static func isRetiredSimpleValue(_ v: CBORVector) -> Bool { v.bytes == [0xF8, 0x18] }

    @Test(arguments: appendixA.filter { !isRetiredSimpleValue($0) })
    func appendixAExample(_ vector: CBORVector) throws {
        let value = try Self.lenient.decode(vector.bytes)
        let expected = try #require(vector.expected)
        #expect(expected.matches(value), "decoded \(value)")

        // The diagnostic form: the source's own text where it gives one, else what it states.
        let diagnostic = value.diagnosticNotation
        if let text = vector.diagnostic, !text.hasPrefix("(_") {
            #expect(diagnostic == text)
        }
        #expect(try NotationParser.parse(diagnostic).matches(value), "\(diagnostic)")

        if vector.roundtrip {
            #expect(CBOREncoder.encode(value) == vector.bytes)
            #expect(try Self.strictWithTags.decode(vector.bytes) == value)
        } else {
            #expect(throws: CBORError.self) { try Self.strictWithTags.decode(vector.bytes) }
        }
        if vector.roundtrip && !Self.containsTag(value) {
            #expect(try Self.strict.decode(vector.bytes) == value)
        } else {
            #expect(throws: CBORError.self) { try Self.strict.decode(vector.bytes) }
        }
    }

    @Test func retiredSimpleValueIsRejected() throws {
        let vectors = Self.appendixA.filter(Self.isRetiredSimpleValue)
        #expect(vectors.count == 1)
        for vector in vectors {
            for decoder in [Self.strict, Self.lenient] {
                let error = #expect(throws: CBORError.self) { try decoder.decode(vector.bytes) }
                #expect(error?.code == .invalidSimpleValue)
            }
        }
    }

    @Test(arguments: spike)
    func spikeItem(_ vector: CBORVector) throws {
        let value = try Self.lenient.decode(vector.bytes)
        let expected = try #require(vector.expected)
        #expect(expected.matches(value), "decoded \(value)")
        #expect(try NotationParser.parse(value.diagnosticNotation).matches(value))

        // Strict mode accepts what the source calls preferred, except what CTAP2 leaves out:
        // tags, and NaN in any form but f97e00.
        let nonCanonicalNaN = value.isNaN && vector.bytes != [0xF9, 0x7E, 0x00]
        if vector.roundtrip && !Self.containsTag(value) && !nonCanonicalNaN {
            #expect(try Self.strict.decode(vector.bytes) == value)
        } else {
            #expect(throws: CBORError.self) { try Self.strict.decode(vector.bytes) }
        }
        if vector.roundtrip && !nonCanonicalNaN {
            #expect(CBOREncoder.encode(value) == vector.bytes)
        }
    }

    @Test(arguments: bad)
    func notWellFormedIsRejected(_ vector: CBORVector) {
        for options in [CBORDecoder.Options.ctap2, .lenient, .init(maxDepth: 1000, requireCanonical: false)] {
            #expect(throws: CBORError.self) { try CBORDecoder(options: options).decode(vector.bytes) }
        }
    }

    static func containsTag(_ value: CBORValue) -> Bool {
        switch value {
        case .tagged: true
        case .array(let items): items.contains(where: containsTag)
        case .map(let map): map.entries.contains { containsTag($0.key) || containsTag($0.value) }
        default: false
        }
    }
}

extension CBORValue {
    var isNaN: Bool {
        if case .float(let d) = self { return d.isNaN }
        return false
    }
}
