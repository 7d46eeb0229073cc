/// Hexadecimal (base16, RFC 4648 §8) text of bytes, and its reverse: the package's one hex
/// codec, for CBOR diagnostic notation's `h'…'`, trace logs, file names and the CLI.
public enum Hex {
    private static let lowerDigits = Array("0123456789abcdef".utf8)
    private static let upperDigits = Array("0123456789ABCDEF".utf8)

    /// Two digits per byte, lower-case unless `uppercase`, with `separator` between bytes.
    public static func encode(_ bytes: some Sequence<UInt8>, uppercase: Bool = false, separator: String = "")
        -> String
    {
        let digits = uppercase ? upperDigits : lowerDigits
        let separator = Array(separator.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * (2 + separator.count))
        for b in bytes {
            if !separator.isEmpty, !out.isEmpty { out.append(contentsOf: separator) }
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// An unsigned integer in lower-case hex, zero-padded to its full width (8 digits for a
    /// `UInt32` CTAPHID channel, 4 for a `UInt16` USB ID).
    public static func encode<Value: FixedWidthInteger & UnsignedInteger>(_ value: Value) -> String {
        encode(withUnsafeBytes(of: value.bigEndian) { Array($0) })
    }

    /// 16 bytes in the textual UUID form (`01020304-0102-0304-0506-010203040506`, lower case),
    /// as AAGUIDs are written; other lengths as plain hex.
    public static func uuid(_ bytes: [UInt8]) -> String {
        let h = encode(bytes)
        guard bytes.count == 16 else { return h }
        let parts = [
            h.prefix(8), h.dropFirst(8).prefix(4), h.dropFirst(12).prefix(4),
            h.dropFirst(16).prefix(4), h.dropFirst(20),
        ]
        return parts.joined(separator: "-")
    }

    /// The 16 bytes of a textual UUID (36 characters, hyphens anywhere ignored, either case), as
    /// ``uuid(_:)`` writes them; nil for any other text.
    public static func decodeUUID(_ text: String) -> [UInt8]? {
        guard text.count == 36, let bytes = decode(text.filter { $0 != "-" }), bytes.count == 16 else { return nil }
        return bytes
    }

    /// Decodes hex digits (either case); with `lenient`, whitespace and a leading `0x` are
    /// skipped first. Nil when the text is not an even number of hex digits.
    public static func decode(_ text: String, lenient: Bool = false) -> [UInt8]? {
        var chars = Array(text.utf8)
        if lenient {
            chars.removeAll { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
            if chars.count >= 2, chars[0] == UInt8(ascii: "0"), chars[1] | 0x20 == UInt8(ascii: "x") {
                chars.removeFirst(2)
            }
        }
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let high = nibble(chars[index]), let low = nibble(chars[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
