import CBOR
import Testing

/// Random values from fixed seeds: the encoder agrees with an independent canonical writer,
/// strict decoding inverts it, and non-canonical spellings decode leniently and fail strictly.
@Suite struct PropertyTests {
    static let seeds: [UInt64] = Array(1...8)
    static let perSeed = 250
    static let strictWithTags = CBORDecoder(options: .init(requireCanonical: true, allowTags: true))
    static let lenient = CBORDecoder(options: .lenient)

    @Test(arguments: seeds)
    func canonicalRoundTrip(seed: UInt64) throws {
        var generator = ValueGenerator(rng: SeededGenerator(seed: seed))
        for _ in 0..<Self.perSeed {
            let value = generator.value()
            let encoded = CBOREncoder.encode(value)
            #expect(encoded == ReferenceWriter.canonical(value), "\(value)")
            let decoded = try Self.strictWithTags.decode(encoded)
            #expect(decoded == value)
            #expect(decoded.hashValue == value.hashValue)
            #expect(CBOREncoder.encode(decoded) == encoded)
            #expect(try Self.lenient.decode(encoded) == value)
            #expect(try NotationParser.parse(value.diagnosticNotation).matches(value), "\(value)")
        }
    }

    @Test(arguments: seeds)
    func nonCanonicalSpellings(seed: UInt64) throws {
        var generator = ValueGenerator(rng: SeededGenerator(seed: seed))
        var deviations = 0
        for round in 0..<Self.perSeed {
            let value = generator.value()
            var writer = ReferenceWriter(rng: SeededGenerator(seed: seed << 32 | UInt64(round)), loose: true)
            writer.write(value)
            #expect(try Self.lenient.decode(writer.out) == value, "\(value)")
            if writer.deviated {
                deviations += 1
                #expect(throws: CBORError.self) { try Self.strictWithTags.decode(writer.out) }
            } else {
                #expect(try Self.strictWithTags.decode(writer.out) == value)
            }
        }
        #expect(deviations > Self.perSeed / 5)
    }

    @Test(arguments: seeds)
    func ctap2ProfileRejectsTags(seed: UInt64) throws {
        var generator = ValueGenerator(rng: SeededGenerator(seed: seed))
        let strict = CBORDecoder(options: .ctap2)
        for _ in 0..<Self.perSeed {
            let value = generator.value()
            let encoded = CBOREncoder.encode(value)
            if RFC8949VectorTests.containsTag(value) {
                let error = #expect(throws: CBORError.self) { try strict.decode(encoded) }
                #expect(error?.code == .tagNotAllowed)
            } else {
                #expect(try strict.decode(encoded) == value)
            }
        }
    }

    /// Every strict prefix of a canonical encoding is truncated input, never a value.
    @Test(arguments: seeds.prefix(3))
    func truncationIsAlwaysAnError(seed: UInt64) {
        var generator = ValueGenerator(rng: SeededGenerator(seed: seed))
        for _ in 0..<40 {
            let encoded = CBOREncoder.encode(generator.value())
            for end in stride(from: 0, to: encoded.count, by: max(1, encoded.count / 64)) {
                #expect(throws: CBORError.self) { try Self.lenient.decode(encoded[..<end]) }
            }
        }
    }
}
