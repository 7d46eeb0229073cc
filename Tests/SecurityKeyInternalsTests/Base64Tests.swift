import Foundation
import Testing
import _SecurityKeyInternals

/// The one base64 codec, against RFC 4648's vectors and Foundation's encoder, and its strictness
/// on hostile text.
@Suite struct Base64Tests {
    /// RFC 4648 §10 test vectors (padded, standard alphabet).
    static let rfc4648: [(String, String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]

    @Test(arguments: rfc4648)
    func standardMatchesRFC4648(_ plain: String, _ encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded, alphabet: .standard, padding: .required) == Array(plain.utf8))
        #expect(Base64.decode(encoded, alphabet: .standard, padding: .optional) == Array(plain.utf8))
    }

    /// The same vectors in the URL-safe alphabet without padding (RFC 4648 §5, WebAuthn's form).
    @Test(arguments: rfc4648)
    func base64URLMatchesRFC4648(_ plain: String, _ padded: String) {
        let unpadded = padded.replacingOccurrences(of: "=", with: "")
        #expect(Base64URL.encode(Array(plain.utf8)) == unpadded)
        #expect(Base64URL.decode(unpadded) == Array(plain.utf8))
        #expect(Base64URL.decode(padded) == Array(plain.utf8))
        #expect(Base64.decode(unpadded, alphabet: .url, padding: .forbidden) == Array(plain.utf8))
    }

    /// Every length from 0 to 130 bytes and every byte value, against Foundation's encoder.
    @Test func agreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        for count in 0...130 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let foundation = Data(bytes).base64EncodedString()
            let url = foundation.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64.encode(bytes) == foundation)
            #expect(Base64URL.encode(bytes) == url)
            #expect(Base64.decode(foundation, alphabet: .standard, padding: .required) == bytes)
            #expect(Base64URL.decode(url) == bytes)
        }
        let all = Array(0...255).map(UInt8.init)
        #expect(Base64.encode(all) == Data(all).base64EncodedString())
        #expect(Base64.decode(Data(all).base64EncodedString(), alphabet: .standard, padding: .required) == all)
    }

    @Test func base64URLRejectsOtherAlphabets() {
        #expect(Base64URL.decode("ab+/") == nil)
        #expect(Base64URL.decode("a") == nil)
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
        #expect(Base64.decode("-_8=", alphabet: .standard, padding: .optional) == nil)
    }

    /// One value, one text: unused bits set, misplaced or missing padding, white space and
    /// lengths no encoding has are all refused.
    @Test(arguments: [
        ("Zh", Base64.Alphabet.url, Base64.Padding.optional),  // "f" is Zg: the last 4 bits are not zero
        ("Zm9=", .standard, .required),  // "fo" is Zm8=: the last 2 bits are not zero
        ("Zg", .standard, .required),  // padding missing
        ("Zg==", .url, .forbidden),  // padding present
        ("Zg=", .standard, .optional),  // too little padding
        ("Zg===", .standard, .optional),  // too much
        ("Z===", .standard, .optional),
        ("Zg==Zg==", .standard, .required),  // padding inside
        ("Zm9v\n", .standard, .optional),  // white space
        (" Zm9v", .url, .optional),
        ("Zm9vY", .url, .optional),  // 4n+1 characters
        ("Zm9v!A==", .standard, .required),
        ("====", .standard, .required),
    ])
    func refusesWhatNoEncodingWrites(_ text: String, _ alphabet: Base64.Alphabet, _ padding: Base64.Padding) {
        #expect(Base64.decode(text, alphabet: alphabet, padding: padding) == nil)
    }

    /// Byte slices and strings decode alike (JWS parts are slices of the compact form).
    @Test func decodesSlices() {
        let jws = Array("eyJhIjoxfQ.Zm9vYmFy.AQID".utf8)
        let parts = jws.split(separator: UInt8(ascii: "."))
        #expect(parts.map { Base64.decode($0, alphabet: .url, padding: .forbidden) } == [
            Array(#"{"a":1}"#.utf8), Array("foobar".utf8), [1, 2, 3],
        ])
    }

    /// What users paste: either alphabet, padded or not, with white space around (RFC 4648 §4 and
    /// §5 encodings of FB FF BF: "+/+/" and "-_-_"); text in neither is refused.
    @Test func eitherAlphabetAroundWhiteSpace() {
        for text in ["+/+/", "-_-_", " -_-_\n", "\t+/+/ "] {
            #expect(Base64.decodeEitherAlphabet(text) == [0xFB, 0xFF, 0xBF], "\(text)")
        }
        #expect(Base64.decodeEitherAlphabet("Zm9vYg") == Array("foob".utf8))
        #expect(Base64.decodeEitherAlphabet("Zm9vYg==") == Array("foob".utf8))
        #expect(Base64.decodeEitherAlphabet("+/-_") == nil)
        #expect(Base64.decodeEitherAlphabet("Zm9v Yg") == nil)
    }
}
