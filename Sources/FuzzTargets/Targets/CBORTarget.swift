import CBOR

extension FuzzTarget {
    /// The CBOR decoder, strict (CTAP2 canonical) and lenient: whatever decodes re-encodes to
    /// bytes that decode to the same value; strictly accepted input re-encodes to itself.
    static let cbor = FuzzTarget("cbor", "CBOR decoder (strict and lenient), round trips") {
        bytes throws(FuzzPropertyViolation) in
        let canonicalWithTags = CBORDecoder(options: .init(requireCanonical: true, allowTags: true))
        let strict = CBORDecoder(options: .ctap2)
        let lenient = CBORDecoder(options: .lenient)
        for decoder in [strict, lenient] {
            guard let value = try? decoder.decode(bytes) else { continue }
            let encoded = CBOREncoder.encode(value)
            try expect(
                (try? canonicalWithTags.decode(encoded)) == value,
                "encode(decode(x)) does not decode to the same value")
            if decoder.options.requireCanonical {
                try expect(encoded == bytes, "strictly accepted input does not re-encode to itself")
                try expect((try? lenient.decode(bytes)) == value, "lenient mode disagrees with strict mode")
            }
            try expect(!value.diagnosticNotation.isEmpty && !value.jsonText().isEmpty, "empty rendering")
        }
        _ = try? lenient.decodeSequence(bytes)
    }
}
