import _SecurityKeyInternals
import CBOR
import Foundation
import Testing

@testable import CTAP2

/// The serialized large-blob array and its per-credential entries (CTAP 2.1 §6.10), against the
/// spec's initial value and python-fido2's `fido2.ctap2.blob` run live (SECURITYKEY_PYTHON):
/// each side opens what the other sealed.
@Suite struct LargeBlobArrayTests {
    /// CTAP 2.1 §6.10.2: the initial serialized large-blob array, an empty CBOR array followed by
    /// LEFT(SHA-256(h'80'), 16).
    static let specInitialArray = "8076be8b528d0075f7aae98d6fa57a6d3c"

    static let keyA = [UInt8](repeating: 0xA1, count: 32)
    static let keyB = (0..<32).map { UInt8($0) }

    @Test func theEmptyArraySerializesToTheSpecsInitialValue() throws {
        #expect(hexString(LargeBlobArray.empty.serialized()) == Self.specInitialArray)
        let reading = LargeBlobArray.parse(try #require(Hex.decode(Self.specInitialArray)))
        #expect(reading.corruption == nil)
        #expect(reading.array.elements.isEmpty)
        #expect(reading.serializedLength == 17)
    }

    @Test func corruptedArraysReadAsEmptyWithTheReason() throws {
        var damaged = try #require(Hex.decode(Self.specInitialArray))
        damaged[5] ^= 0x01
        #expect(LargeBlobArray.parse(damaged).corruption == .hashMismatch)
        #expect(LargeBlobArray.parse(damaged).array.elements.isEmpty)
        #expect(LargeBlobArray.parse(Array(damaged.prefix(16))).corruption == .tooShort(16))
        #expect(LargeBlobArray.parse([]).corruption == .tooShort(0))
    }

    /// python-fido2 seals entries (its own AES-GCM, zlib and CBOR), we open them.
    static let pythonSeal = """
        import hashlib, json, sys, zlib
        from fido2 import cbor
        from fido2.ctap2.blob import _lb_pack
        a, b = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
        data_a = b"alice's blob " * 40
        data_b = bytes(range(256))
        array = [_lb_pack(a, data_a), "not an entry", _lb_pack(b, data_b)]
        # A bomb: a megabyte of zeros sealed under b with an origSize of 10.
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        o = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        bomb = o.compress(bytes(1 << 20)) + o.flush()
        nonce = bytes(12)
        ad = b"blob" + (10).to_bytes(8, "little")
        array.append({1: AESGCM(b).encrypt(nonce, bomb, ad), 2: nonce, 3: 10})
        encoded = cbor.encode(array)
        print(json.dumps({"serialized": (encoded + hashlib.sha256(encoded).digest()[:16]).hex(),
                          "a": data_a.hex(), "b": data_b.hex()}))
        """

    @Test func weOpenWhatPythonFIDO2Sealed() async throws {
        let out = try await runPython(Self.pythonSeal, [hexString(Self.keyA), hexString(Self.keyB)])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        let serializedHex = try #require(object["serialized"] as? String)
        let serialized = try #require(Hex.decode(serializedHex))
        let reading = LargeBlobArray.parse(serialized)
        #expect(reading.corruption == nil)
        #expect(reading.array.elements.count == 4)
        #expect(reading.array.entry(at: 1) == nil)
        #expect(reading.array.blob(key: Self.keyA).map(hexString) == object["a"] as? String)
        #expect(reading.array.blob(key: Self.keyB).map(hexString) == object["b"] as? String)
        #expect(reading.array.blob(key: [UInt8](repeating: 0, count: 32)) == nil)
        // The bomb authenticates under keyB but does not inflate to its origSize: damaged, and
        // never more than origSize + 1 bytes are produced.
        guard case .damaged = try #require(reading.array.entry(at: 3)).open(key: Self.keyB) else {
            Issue.record("the deflate bomb was not reported as damaged")
            return
        }
        // Removing keyB's entries removes the bomb too and leaves the rest as they were.
        var array = reading.array
        #expect(array.removeEntries(key: Self.keyB) == 2)
        #expect(array.elements == [reading.array.elements[0], reading.array.elements[1]])
    }

    /// A credential's blob from an array python-fido2 sealed, or the typed reason there is none.
    @Test func aCredentialsBlobOrWhyThereIsNone() async throws {
        let out = try await runPython(Self.pythonSeal, [hexString(Self.keyA), hexString(Self.keyB)])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        let serializedHex = try #require(object["serialized"] as? String)
        let reading = LargeBlobArray.parse(try #require(Hex.decode(serializedHex)))
        let blobA = try LargeBlobs.Lookup(reading, key: Self.keyA).requireData(credential: "a")
        #expect(hexString(blobA) == object["a"] as? String)
        let none = #expect(throws: CTAP2Error(.noLargeBlob, "")) {
            try LargeBlobs.Lookup(reading, key: [UInt8](repeating: 0, count: 32)).requireData(credential: "AAAA")
        }
        #expect(none?.message == "The credential AAAA has no large blob.")
        #expect(none?.category == .failure)
        // Without keyB's good entry only python's deflate bomb is sealed under keyB: damaged.
        var bombOnly = reading.array
        bombOnly.elements.remove(at: 2)
        let damaged = LargeBlobs.Lookup(LargeBlobArray.parse(bombOnly.serialized()), key: Self.keyB)
        #expect(damaged.damage != nil)
        #expect(throws: CTAP2Error(.largeBlobDamaged, "")) { try damaged.requireData(credential: "b") }
        // The spec's initial array with a bit flipped: corrupted, whatever the key.
        var corrupted = try #require(Hex.decode(Self.specInitialArray))
        corrupted[5] ^= 0x01
        #expect(throws: CTAP2Error(.largeBlobCorrupted, "")) {
            try LargeBlobs.Lookup(LargeBlobArray.parse(corrupted), key: Self.keyA).requireData(credential: "a")
        }
    }

    /// python-fido2 opens what we sealed: it checks the trailing hash, decodes the array and,
    /// for each key, finds the entry its own _lb_unpack and raw inflate accept.
    static let pythonOpen = """
        import hashlib, json, sys, zlib
        from fido2 import cbor
        from fido2.ctap2.blob import _lb_unpack
        serialized = bytes.fromhex(sys.argv[1])
        body, check = serialized[:-16], serialized[-16:]
        assert hashlib.sha256(body).digest()[:16] == check, "hash"
        array = cbor.decode(body)
        out = {"count": len(array)}
        for name, key in (("a", sys.argv[2]), ("b", sys.argv[3])):
            out[name] = None
            for entry in array:
                try:
                    compressed, size = _lb_unpack(bytes.fromhex(key), entry)
                except Exception:
                    continue
                o = zlib.decompressobj(wbits=-zlib.MAX_WBITS)
                data = o.decompress(compressed) + o.flush()
                assert len(data) == size
                out[name] = data.hex()
        print(json.dumps(out))
        """

    @Test func pythonFIDO2OpensWhatWeSealed() async throws {
        var array = LargeBlobArray(elements: [.textString("kept"), .unsigned(7)])
        let dataA = Array(repeating: Array("compressible ".utf8), count: 50).flatMap { $0 }
        let dataB = Array("b".utf8)
        try array.setBlob(dataA, key: Self.keyA)
        try array.setBlob(dataB, key: Self.keyB)
        // Replacing keyA's blob leaves one entry for it.
        try array.setBlob(dataA + [0], key: Self.keyA)
        let out = try await runPython(
            Self.pythonOpen, [hexString(array.serialized()), hexString(Self.keyA), hexString(Self.keyB)])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        #expect(object["count"] as? Int == 4)
        #expect(object["a"] as? String == hexString(dataA + [0]))
        #expect(object["b"] as? String == hexString(dataB))
        #expect(array.elements.prefix(2) == [.textString("kept"), .unsigned(7)])
        // The entry is compressed: fewer ciphertext bytes than the data (plus tag).
        let entry = try #require(array.find(key: Self.keyA).flatMap { array.entry(at: $0.index) })
        #expect(entry.ciphertext.count < dataA.count)
        #expect(entry.nonce.count == 12)
    }

    @Test func hostileEntriesAreSkippedNotTrusted() {
        // Wrong nonce size, ciphertext shorter than a tag, missing origSize: not entries.
        let malformed: [CBORValue] = [
            .map([1: .byteString([UInt8](repeating: 0, count: 32)), 2: .byteString([0]), 3: 1]),
            .map([1: .byteString([0]), 2: .byteString([UInt8](repeating: 0, count: 12)), 3: 1]),
            .map([1: .byteString([UInt8](repeating: 0, count: 32)), 2: .byteString([UInt8](repeating: 0, count: 12))]),
        ]
        let array = LargeBlobArray(elements: malformed)
        for index in malformed.indices { #expect(array.entry(at: index) == nil) }
        #expect(array.blob(key: Self.keyA) == nil)
    }

    @Test func requestsHaveTheSpecsShape() throws {
        let get = LargeBlobsRequest.get(offset: 17, count: 960)
        #expect(try get.encoded() == [0x0C] + CBOREncoder.encode(.map([1: 960, 3: 17])))
        let first = try LargeBlobsRequest.set(fragment: [1, 2, 3], offset: 0, length: 20, token: nil)
        #expect(try first.encoded() == [0x0C] + CBOREncoder.encode(.map([2: .byteString([1, 2, 3]), 3: 0, 4: 20])))
        // A later fragment with a length, or a read with one, is refused before sending.
        #expect(throws: CTAP2Error.self) {
            try LargeBlobsRequest(set: [1], offset: 5, length: 9).encoded()
        }
        #expect(throws: CTAP2Error.self) { try LargeBlobsRequest(get: 5, offset: 0, length: 9).encoded() }
    }
}
