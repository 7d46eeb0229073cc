import _SecurityKeyInternals

extension FuzzTarget {
    /// The one base64 codec on hostile text, in both alphabets and every padding rule: one text,
    /// one value. Whatever decodes re-encodes to the very text it came from, and the same bytes
    /// never decode under one alphabet or padding rule and fail under a looser one.
    static let base64 = FuzzTarget("base64", "base64/base64url decoder (strict), round trips") {
        bytes throws(FuzzPropertyViolation) in
        for alphabet in [Base64.Alphabet.standard, .url] {
            let forbidden = Base64.decode(bytes, alphabet: alphabet, padding: .forbidden)
            let required = Base64.decode(bytes, alphabet: alphabet, padding: .required)
            let optional = Base64.decode(bytes, alphabet: alphabet, padding: .optional)
            try expect(forbidden == nil || optional == forbidden, "optional padding refused unpadded text")
            try expect(required == nil || optional == required, "optional padding refused padded text")
            try expect(
                optional == nil || forbidden != nil || required != nil, "optional accepted what both refused")
            if let value = forbidden {
                try expect(
                    Array(Base64.encode(value, alphabet: alphabet, padded: false).utf8) == bytes,
                    "unpadded text does not re-encode to itself")
            }
            if let value = required {
                try expect(
                    Array(Base64.encode(value, alphabet: alphabet, padded: true).utf8) == bytes,
                    "padded text does not re-encode to itself")
            }
        }
        if let value = Base64URL.decode(String(decoding: bytes, as: UTF8.self)) {
            try expect(Base64URL.decode(Base64URL.encode(value)) == value, "base64url does not round-trip")
        }
        // A collection without contiguous storage decodes as its bytes do.
        try expect(
            Base64.decode(bytes.lazy.map { $0 }, alphabet: .url, padding: .optional)
                == Base64.decode(bytes, alphabet: .url, padding: .optional),
            "a non-contiguous collection decodes differently")
        // What users paste: either alphabet, white space around it ignored; base64url first.
        let pasted = String(decoding: bytes, as: UTF8.self)
        let either = Base64.decodeEitherAlphabet(pasted)
        try expect(Base64.decodeEitherAlphabet(" \n\(pasted)\t ") == either, "surrounding white space changed the value")
        if pasted.allSatisfy({ !$0.isWhitespace }) {
            let url = Base64.decode(pasted, alphabet: .url, padding: .optional)
            try expect(
                either == (url ?? Base64.decode(pasted, alphabet: .standard, padding: .optional)),
                "text in either alphabet decodes to something else")
        }
        // The encoder on arbitrary bytes: the output decodes back under the strictest rules.
        try expect(
            Base64.decode(Base64.encode(bytes), alphabet: .standard, padding: .required) == bytes,
            "encode then decode lost bytes")
    }
}
