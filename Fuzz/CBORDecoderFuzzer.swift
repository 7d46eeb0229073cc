// libFuzzer entry point for the CBOR decoder, built by scripts/fuzz.sh into .build-fuzz together
// with Sources/CBOR/*.swift as one module (so there is no `import CBOR` here).
//
// For every input, in strict (CTAP2) and lenient mode: decoding must not trap, and whatever
// decodes must re-encode to bytes that strict decoding (tags allowed) reads back as the same
// value. Strictly accepted input must re-encode to exactly itself and decode the same leniently.
// A violated property traps, which libFuzzer reports and saves as a crash file.

let canonicalWithTags = CBORDecoder(options: .init(requireCanonical: true, allowTags: true))
let decoders = [CBORDecoder(options: .ctap2), CBORDecoder(options: .lenient)]

@_cdecl("LLVMFuzzerTestOneInput")
public func cborFuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    for decoder in decoders {
        guard let value = try? decoder.decode(bytes) else { continue }
        let encoded = CBOREncoder.encode(value)
        let reread = try? canonicalWithTags.decode(encoded)
        precondition(reread == value, "encode(decode(x)) does not decode to the same value")
        if decoder.options.requireCanonical {
            precondition(encoded == bytes, "strictly accepted input does not re-encode to itself")
            precondition((try? decoders[1].decode(bytes)) == value, "lenient mode disagrees with strict mode")
        }
        precondition(!value.diagnosticNotation.isEmpty && !value.jsonText().isEmpty)
    }
    _ = try? decoders[1].decodeSequence(bytes)
    return 0
}
