import CBOR
import CTAP2
import Crypto

extension FuzzTarget {
    /// The large-blob array (CTAP 2.1 §6.10.3) as a key returns it, its per-credential entries
    /// and their raw DEFLATE content, and the authenticatorLargeBlobs response.
    ///
    /// The input is read three ways: as a serialized array (trailing hash included, so the
    /// corruption paths run), as the CBOR of an array to which the harness appends the right
    /// hash (so fuzzed arrays get past it), and as the response body. The fuzzer cannot forge
    /// AES-GCM tags, so every entry-shaped element is re-sealed under a fixed key with the
    /// fuzzed (compressed) bytes as plaintext: opening it then inflates fuzzed DEFLATE streams
    /// with fuzzed origSizes. Inflating stays within origSize and
    /// ``LargeBlobEntry/maxOriginalSize``; data that opens seals and opens again the same; an
    /// array that parses serializes to one that parses the same.
    static let largeBlob = FuzzTarget("large-blob", "large-blob array, entries and raw DEFLATE inflate") {
        bytes throws(FuzzPropertyViolation) in
        _ = try? LargeBlobsResponse(cbor: bytes)
        let raw = LargeBlobArray.parse(bytes)
        try expect(raw.serializedLength == bytes.count, "a reading that does not count the bytes read")
        if let corruption = raw.corruption {
            try expect(raw.array == .empty, "a corrupted array that does not read as empty")
            try expect(
                !corruption.code.isEmpty && !corruption.description.isEmpty, "a corruption without a name")
        }
        // Sealing refuses a key of another length than 32 (the input's length picks it), a nonce
        // of another length than 12, and (checked once per process) data beyond the limit.
        let keyLength = bytes.count % (2 * LargeBlobEntry.keyLength)
        try expect(
            ((try? LargeBlobEntry.seal(
                Array(bytes.prefix(16)), key: [UInt8](repeating: 0x4B, count: keyLength))) != nil)
                == (keyLength == LargeBlobEntry.keyLength),
            "a large blob sealed under a key of \(keyLength) bytes")
        try expect(
            (try? LargeBlobEntry.seal(
                Array(bytes.prefix(16)), key: fuzzLargeBlobKey, nonce: Array(bytes.prefix(11)))) == nil,
            "a large blob sealed with a nonce shorter than 12 bytes")
        try expect(oversizedBlobRefused, "a large blob over the limit sealed")
        let hashed = LargeBlobArray.parse(bytes + LargeBlobArray.truncatedHash(bytes))
        for reading in [raw, hashed] where !reading.isCorrupted {
            let again = LargeBlobArray.parse(reading.array.serialized())
            try expect(again.corruption == nil, "a parsed array serializes to a corrupted one")
            try expect(
                again.array.elements.count == reading.array.elements.count,
                "a parsed array serializes to another number of elements")
            try checkEntries(reading.array)
        }
    }
}

/// The key the harness seals fuzzed entries under.
private let fuzzLargeBlobKey = [UInt8](repeating: 0x4B, count: LargeBlobEntry.keyLength)

/// Whether sealing refuses data one byte over ``LargeBlobEntry/maxOriginalSize`` (once per process:
/// 4 MiB per input would be too slow).
private let oversizedBlobRefused: Bool =
    (try? LargeBlobEntry.seal(
        [UInt8](repeating: 0, count: LargeBlobEntry.maxOriginalSize + 1), key: fuzzLargeBlobKey)) == nil

/// Re-seals every entry-shaped element of `array` under ``fuzzLargeBlobKey`` and opens it.
private func checkEntries(_ array: LargeBlobArray) throws(FuzzPropertyViolation) {
    var resealed = array
    for (index, element) in array.elements.enumerated().prefix(8) {
        guard let entry = array.entry(at: index) else {
            try expect(
                LargeBlobEntry(cbor: element) == nil, "entry(at:) disagrees with LargeBlobEntry(cbor:)")
            continue
        }
        try expect(
            entry.open(key: fuzzLargeBlobKey) == .otherKey, "an entry the fuzzer could not seal opened")
        guard let sealed = reseal(entry) else { continue }
        resealed.elements[index] = sealed.cbor
        switch sealed.open(key: fuzzLargeBlobKey) {
        case .otherKey:
            throw FuzzPropertyViolation(description: "an entry sealed under the key does not open with it")
        case .damaged(let reason):
            try expect(!reason.isEmpty, "a damaged entry without a reason")
        case .data(let data):
            try expect(
                UInt64(data.count) == sealed.originalSize && data.count <= LargeBlobEntry.maxOriginalSize,
                "an entry inflated to \(data.count) bytes, not its origSize of \(sealed.originalSize)")
            // Compression round trip through the library's own sealing.
            guard let again = try? LargeBlobEntry.seal(data, key: fuzzLargeBlobKey) else {
                throw FuzzPropertyViolation(description: "data that opened does not seal again")
            }
            try expect(
                again.open(key: fuzzLargeBlobKey) == .data(data), "sealed data does not open to itself")
        }
    }
    // The array-level lookups agree with the entries.
    if let found = resealed.find(key: fuzzLargeBlobKey) {
        try expect(found.opened.isThisKey, "find(key:) returned an entry of another key")
        if case .data(let data) = found.opened {
            try expect(resealed.blob(key: fuzzLargeBlobKey) == data, "blob(key:) disagrees with find(key:)")
        }
        var removed = resealed
        try expect(removed.removeEntries(key: fuzzLargeBlobKey) > 0, "removeEntries(key:) removed nothing")
        try expect(removed.find(key: fuzzLargeBlobKey) == nil, "an entry survived removeEntries(key:)")
    }
    var stored = resealed
    if (try? stored.setBlob([0x01, 0x02], key: fuzzLargeBlobKey)) != nil {
        try expect(
            stored.blob(key: fuzzLargeBlobKey) == [0x01, 0x02], "setBlob then blob(key:) lost the data")
    }
}

/// `entry` with its ciphertext (less the tag) sealed as plaintext under ``fuzzLargeBlobKey``.
private func reseal(_ entry: LargeBlobEntry) -> LargeBlobEntry? {
    let size = entry.originalSize
    let associated = Array("blob".utf8) + (0..<8).map { UInt8(truncatingIfNeeded: size >> (8 * $0)) }
    guard let nonce = try? AES.GCM.Nonce(data: entry.nonce),
        let box = try? AES.GCM.seal(
            entry.ciphertext.dropLast(LargeBlobEntry.tagLength), using: SymmetricKey(data: fuzzLargeBlobKey),
            nonce: nonce, authenticating: associated)
    else { return nil }
    return LargeBlobEntry(
        ciphertext: Array(box.ciphertext) + Array(box.tag), nonce: entry.nonce, originalSize: size)
}
