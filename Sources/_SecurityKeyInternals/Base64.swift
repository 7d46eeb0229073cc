/// Base64 (RFC 4648 §4) and base64url (§5): the package's one codec.
///
/// Decoding is strict, since what it reads comes from keys, files, relying parties and the
/// network: only the alphabet's characters, no whitespace, padding only as the caller allows it
/// and only where it belongs, and zero unused bits in the last character, so that one text
/// decodes to one value and one value has one text.
public enum Base64 {
    /// Which 64 characters stand for the six-bit values.
    public enum Alphabet: Sendable {
        /// `A`–`Z`, `a`–`z`, `0`–`9`, `+`, `/` (RFC 4648 §4).
        case standard
        /// `A`–`Z`, `a`–`z`, `0`–`9`, `-`, `_` (RFC 4648 §5), as WebAuthn and JOSE write bytes.
        case url
    }

    /// Whether a text being decoded may end in `=`.
    public enum Padding: Sendable {
        /// The text is a multiple of four characters, padded with `=`.
        case required
        /// No `=` at all (RFC 7515 §2 "Base64url Encoding").
        case forbidden
        /// Either form; padding, when there, must be the right amount.
        case optional
    }

    /// The text of `bytes` in `alphabet`, with `=` padding when `padded`.
    public static func encode(
        _ bytes: some Sequence<UInt8>, alphabet: Alphabet = .standard, padded: Bool = true
    ) -> String {
        let ascii =
            bytes.withContiguousStorageIfAvailable { encodedASCII($0, alphabet: alphabet, padded: padded) }
            ?? Array(bytes).withUnsafeBufferPointer { encodedASCII($0, alphabet: alphabet, padded: padded) }
        return String(decoding: ascii, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil when it is not `alphabet` with `padding` (see ``Base64``).
    public static func decode(_ text: some Collection<UInt8>, alphabet: Alphabet, padding: Padding)
        -> [UInt8]?
    {
        if let decoded = text.withContiguousStorageIfAvailable({
            decode(buffer: $0, alphabet: alphabet, padding: padding)
        }) {
            return decoded
        }
        return Array(text).withUnsafeBufferPointer {
            decode(buffer: $0, alphabet: alphabet, padding: padding)
        }
    }

    /// ``decode(_:alphabet:padding:)`` of a string's UTF-8.
    public static func decode(_ text: some StringProtocol, alphabet: Alphabet, padding: Padding) -> [UInt8]? {
        decode(Array(text.utf8), alphabet: alphabet, padding: padding)
    }

    private static let standardDigits = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlDigits = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// Six-bit value of each byte in each alphabet; `invalid` for a byte outside it.
    private static let standardValues = values(of: standardDigits)
    private static let urlValues = values(of: urlDigits)
    private static let invalid: UInt8 = 0xFF
    private static let pad = UInt8(ascii: "=")

    private static func values(of digits: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: invalid, count: 256)
        for (value, digit) in digits.enumerated() { table[Int(digit)] = UInt8(value) }
        return table
    }

    private static func encodedASCII(_ bytes: UnsafeBufferPointer<UInt8>, alphabet: Alphabet, padded: Bool)
        -> [UInt8]
    {
        let whole = bytes.count / 3
        let rest = bytes.count - whole * 3
        let length = whole * 4 + (rest == 0 ? 0 : padded ? 4 : rest + 1)
        let digits = alphabet == .standard ? standardDigits : urlDigits
        return digits.withUnsafeBufferPointer { digits in
            [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
                var index = 0
                var at = 0
                for _ in 0..<whole {
                    let group =
                        UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                    out[at] = digits[Int(group >> 18)]
                    out[at + 1] = digits[Int(group >> 12 & 0x3F)]
                    out[at + 2] = digits[Int(group >> 6 & 0x3F)]
                    out[at + 3] = digits[Int(group & 0x3F)]
                    index += 3
                    at += 4
                }
                if rest > 0 {
                    var group = UInt32(bytes[index]) << 16
                    if rest == 2 { group |= UInt32(bytes[index + 1]) << 8 }
                    out[at] = digits[Int(group >> 18)]
                    out[at + 1] = digits[Int(group >> 12 & 0x3F)]
                    at += 2
                    if rest == 2 {
                        out[at] = digits[Int(group >> 6 & 0x3F)]
                        at += 1
                    }
                    while padded, at < length {
                        out[at] = pad
                        at += 1
                    }
                }
                initialized = at
            }
        }
    }

    private static func decode(buffer: UnsafeBufferPointer<UInt8>, alphabet: Alphabet, padding: Padding)
        -> [UInt8]?
    {
        // At most two `=`, and only at the end of a text of whole quads; a third `=` is left in
        // the data and refused there.
        var end = buffer.count
        var pads = 0
        while pads < 2, end > 0, buffer[end - 1] == pad {
            end -= 1
            pads += 1
        }
        switch padding {
        case .required: guard buffer.count % 4 == 0 else { return nil }
        case .forbidden: guard pads == 0 else { return nil }
        case .optional: guard pads == 0 || buffer.count % 4 == 0 else { return nil }
        }
        let rest = end % 4
        guard rest != 1 else { return nil }
        let table = alphabet == .standard ? standardValues : urlValues
        let length = end / 4 * 3 + (rest == 0 ? 0 : rest - 1)
        var valid = true
        let out = table.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
                initialized = 0
                var index = 0
                var at = 0
                while index + 4 <= end {
                    let a = table[Int(buffer[index])]
                    let b = table[Int(buffer[index + 1])]
                    let c = table[Int(buffer[index + 2])]
                    let d = table[Int(buffer[index + 3])]
                    // A byte outside the alphabet is `invalid` (0xFF), the only value with the top bits set.
                    guard (a | b | c | d) & 0xC0 == 0 else {
                        valid = false
                        return
                    }
                    let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[at] = UInt8(truncatingIfNeeded: group >> 16)
                    out[at + 1] = UInt8(truncatingIfNeeded: group >> 8)
                    out[at + 2] = UInt8(truncatingIfNeeded: group)
                    index += 4
                    at += 3
                }
                if rest > 0 {
                    let a = table[Int(buffer[index])]
                    let b = table[Int(buffer[index + 1])]
                    let c = rest == 3 ? table[Int(buffer[index + 2])] : 0
                    let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                    // The bits past the last whole byte must be zero, or two texts would name one value.
                    guard (a | b | c) & 0xC0 == 0, group & (rest == 2 ? 0xFFFF : 0xFF) == 0 else {
                        valid = false
                        return
                    }
                    out[at] = UInt8(truncatingIfNeeded: group >> 16)
                    at += 1
                    if rest == 3 {
                        out[at] = UInt8(truncatingIfNeeded: group >> 8)
                        at += 1
                    }
                }
                initialized = at
            }
        }
        return valid ? out : nil
    }
}

/// Base64url without padding, the form WebAuthn gives binary members in (RFC 4648 §5;
/// WebAuthn L3 §5.10 "Base64url encoding"): ``Base64`` with that alphabet.
public enum Base64URL {
    /// Unpadded base64url.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Base64.encode(bytes, alphabet: .url, padded: false)
    }

    /// The bytes of base64url text (padding optional), or nil when it is not base64url.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        Base64.decode(text, alphabet: .url, padding: .optional)
    }
}

extension Base64 {
    /// The bytes of text in either alphabet, base64url or standard base64, padded or not, with
    /// white space around it (what users paste on a command line); nil when it is neither.
    public static func decodeEitherAlphabet(_ text: some StringProtocol) -> [UInt8]? {
        let trimmed = text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()
        let body = String(trimmed)
        return decode(body, alphabet: .url, padding: .optional) ?? decode(body, alphabet: .standard, padding: .optional)
    }
}
