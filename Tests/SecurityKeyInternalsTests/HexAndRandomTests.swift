import Foundation
import Testing
import _SecurityKeyInternals

/// The one hex codec (RFC 4648 §10's base16 vectors, and `String(format:)` as an outside
/// encoder) and the one random source.
@Suite struct HexAndRandomTests {
    @Test(arguments: [("", ""), ("f", "66"), ("fo", "666f"), ("foo", "666f6f"), ("foobar", "666f6f626172")])
    func base16MatchesRFC4648(_ plain: String, _ encoded: String) {
        #expect(Hex.encode(Array(plain.utf8)) == encoded)
        #expect(Hex.encode(Array(plain.utf8), uppercase: true) == encoded.uppercased())
        #expect(Hex.decode(encoded) == Array(plain.utf8))
        #expect(Hex.decode(encoded.uppercased()) == Array(plain.utf8))
    }

    @Test func everyByteAgreesWithStringFormat() {
        let all = Array(0...255).map(UInt8.init)
        #expect(Hex.encode(all) == all.map { String(format: "%02x", $0) }.joined())
        #expect(Hex.encode(all, uppercase: true, separator: " ") == all.map { String(format: "%02X", $0) }.joined(separator: " "))
        #expect(Hex.decode(Hex.encode(all)) == all)
    }

    @Test func integersAreZeroPaddedToTheirWidth() {
        #expect(Hex.encode(UInt32(0x00ab_0001)) == String(format: "%08x", 0x00ab_0001))
        #expect(Hex.encode(UInt32.max) == "ffffffff")
        #expect(Hex.encode(UInt16(0x1050)) == "1050")
        #expect(Hex.encode(UInt16(0x7)) == "0007")
    }

    @Test func decodingRefusesWhatIsNotHex() {
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("0x0102") == nil)
        #expect(Hex.decode("0x01 02\n", lenient: true) == [1, 2])
    }

    @Test func randomBytesHaveTheLengthAskedAndVary() {
        for count in [0, 1, 7, 8, 9, 16, 32, 33] { #expect(SystemRandom.bytes(count).count == count) }
        #expect(SystemRandom.bytes(-1).isEmpty)
        // Two 32-byte draws being equal has probability 2^-256.
        #expect(SystemRandom.bytes(32) != SystemRandom.bytes(32))
        // Every byte value turns up in 64 KiB (a stuck or short-filled buffer would not).
        #expect(Set(SystemRandom.bytes(65_536)).count == 256)
    }
}

/// Textual UUIDs to their 16 bytes: RFC 9562 §4's layout, with the example UUID of RFC 4122
/// §3 (`urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6`) and YubiKey 5 NFC's AAGUID as FIDO MDS3
/// lists it.
@Suite struct UUIDTextTests {
    @Test(arguments: [
        ("f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "f81d4fae7dec11d0a76500a0c91e6bf6"),
        ("F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6", "f81d4fae7dec11d0a76500a0c91e6bf6"),
        ("2fc0579f-8113-47ea-b116-bb5a8db9202a", "2fc0579f811347eab116bb5a8db9202a"),
    ])
    func uuidBytes(_ text: String, _ hex: String) {
        #expect(Hex.decodeUUID(text) == Hex.decode(hex))
        #expect(Hex.decodeUUID(text).map(Hex.uuid) == text.lowercased())
    }

    @Test(arguments: ["", "f81d4fae7dec11d0a76500a0c91e6bf6", "f81d4fae-7dec-11d0-a765-00a0c91e6bf", "g81d4fae-7dec-11d0-a765-00a0c91e6bf6"])
    func notAUUID(_ text: String) {
        #expect(Hex.decodeUUID(text) == nil)
    }
}
