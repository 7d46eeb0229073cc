/// Strict base64 and base64url decoding for hostile input: only the alphabet's characters,
/// no whitespace, canonical padding, and zero unused bits, so one encoding maps to one value.
enum Base64Strict {
    /// Decodes unpadded base64url (RFC 7515 §2 "Base64url Encoding").
    static func decodeURL(_ text: some Collection<UInt8>) -> [UInt8]? {
        decode(text, urlSafe: true)
    }

    /// Decodes padded standard base64 (RFC 4648 §4), as used in x5c and attestationRootCertificates.
    static func decodeStandard(_ text: some Collection<UInt8>) -> [UInt8]? {
        decode(text, urlSafe: false)
    }

    private static func value(_ c: UInt8, urlSafe: Bool) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-") where urlSafe, UInt8(ascii: "+") where !urlSafe: 62
        case UInt8(ascii: "_") where urlSafe, UInt8(ascii: "/") where !urlSafe: 63
        default: nil
        }
    }

    private static func decode(_ text: some Collection<UInt8>, urlSafe: Bool) -> [UInt8]? {
        var chars = Array(text)
        if !urlSafe {
            // Standard base64 must be padded to a multiple of four; strip at most two '='.
            guard chars.count % 4 == 0 else { return nil }
            var pads = 0
            while pads < 2, chars.last == UInt8(ascii: "=") {
                chars.removeLast()
                pads += 1
            }
        }
        guard chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for c in chars {
            guard let v = value(c, urlSafe: urlSafe) else { return nil }
            buffer = (buffer << 6) | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits must be zero, or two texts would decode to the same bytes.
        guard buffer == 0 else { return nil }
        return out
    }
}
