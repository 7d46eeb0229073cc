import CBOR
import Crypto

/// The serialized large-blob array (CTAP 2.1 §6.10.3): a CBOR array followed by the left 16
/// bytes of the SHA-256 of that CBOR.
///
/// Elements are kept as CBOR values, whatever they are: entries of other credentials, and
/// elements that are not entries at all, are written back as they were read.
public struct LargeBlobArray: Hashable, Sendable {
    /// The length of the truncated hash at the end.
    public static let hashLength = 16
    /// The shortest serialized array: an empty CBOR array (one byte) and the hash.
    public static let minimumSerializedLength = 1 + hashLength
    /// The most bytes of a serialized array this library parses.
    public static let maxSerializedLength = 16 << 20

    /// The elements, in order.
    public var elements: [CBORValue]

    /// An array of `elements`.
    public init(elements: [CBORValue] = []) { self.elements = elements }

    /// The empty array, as a key starts with and as a corrupted one reads.
    public static let empty = LargeBlobArray()

    /// The serialized array: CBOR ‖ LEFT(SHA-256(CBOR), 16).
    public func serialized() -> [UInt8] {
        let cbor = CBOREncoder.encode(.array(elements))
        return cbor + Self.truncatedHash(cbor)
    }

    /// LEFT(SHA-256(bytes), 16).
    public static func truncatedHash(_ bytes: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: bytes).prefix(hashLength))
    }

    /// Why a serialized array was not accepted; the spec has platforms read it as empty.
    public enum Corruption: Hashable, Sendable, CustomStringConvertible {
        /// Fewer bytes than an empty array and its hash.
        case tooShort(Int)
        /// The trailing 16 bytes are not the truncated hash of the rest.
        case hashMismatch
        /// The hash matches but the rest is not one CBOR array.
        case notAnArray

        /// A stable, switchable name.
        public var code: String {
            switch self {
            case .tooShort: "too-short"
            case .hashMismatch: "hash-mismatch"
            case .notAnArray: "not-an-array"
            }
        }

        public var description: String {
            switch self {
            case .tooShort(let n):
                "it is \(n) bytes, fewer than the \(LargeBlobArray.minimumSerializedLength) of an empty array"
            case .hashMismatch: "its trailing hash does not match its content"
            case .notAnArray: "its content is not a CBOR array"
            }
        }
    }

    /// A serialized array as read from a key: the array, empty where the bytes were corrupted,
    /// and what was wrong with them.
    public struct Reading: Hashable, Sendable {
        /// The array; empty when ``corruption`` is set.
        public var array: LargeBlobArray
        /// Why the bytes read were not accepted, or nil when they were.
        public var corruption: Corruption?
        /// How many serialized bytes the key holds.
        public var serializedLength: Int

        /// Whether the key's array was corrupted (and reads as empty).
        public var isCorrupted: Bool { corruption != nil }
    }

    /// Checks and parses a serialized array. Never throws: a corrupted array reads as empty,
    /// as the spec says, with the reason in ``Reading/corruption``.
    public static func parse(_ bytes: [UInt8]) -> Reading {
        func corrupted(_ reason: Corruption) -> Reading {
            Reading(array: .empty, corruption: reason, serializedLength: bytes.count)
        }
        guard bytes.count >= minimumSerializedLength else { return corrupted(.tooShort(bytes.count)) }
        let cbor = Array(bytes.dropLast(hashLength))
        guard truncatedHash(cbor) == Array(bytes.suffix(hashLength)) else { return corrupted(.hashMismatch) }
        // Lenient: another platform wrote this array, not the key (see the reason's comment).
        let decoder = ResponseDecoding.lenientDecoder(
            maxSize: maxSerializedLength, because: .platformWrittenLargeBlobArray)
        guard let value = try? decoder.decode(cbor), let elements = value.arrayValue else {
            return corrupted(.notAnArray)
        }
        return Reading(array: LargeBlobArray(elements: elements), corruption: nil, serializedLength: bytes.count)
    }

    // MARK: Per-credential entries

    /// The element at `index` as an entry, or nil when it is not one.
    public func entry(at index: Int) -> LargeBlobEntry? {
        elements.indices.contains(index) ? LargeBlobEntry(cbor: elements[index]) : nil
    }

    /// What the first entry sealed under `key` holds: its index and what it opened to; nil when
    /// no entry is sealed under `key`.
    public func find(key: [UInt8]) -> (index: Int, opened: LargeBlobEntry.Opened)? {
        for (index, element) in elements.enumerated() {
            guard let entry = LargeBlobEntry(cbor: element) else { continue }
            let opened = entry.open(key: key)
            if opened.isThisKey { return (index, opened) }
        }
        return nil
    }

    /// The data stored for `key`: that of the first entry sealed under it that opens whole.
    public func blob(key: [UInt8]) -> [UInt8]? {
        for element in elements {
            if case .data(let data)? = LargeBlobEntry(cbor: element)?.open(key: key) { return data }
        }
        return nil
    }

    /// Removes every entry sealed under `key`, leaving the other elements in order; returns how
    /// many were removed.
    @discardableResult
    public mutating func removeEntries(key: [UInt8]) -> Int {
        let before = elements.count
        elements.removeAll { LargeBlobEntry(cbor: $0)?.open(key: key).isThisKey == true }
        return before - elements.count
    }

    /// Stores `data` for `key`: the entries sealed under `key` are removed and one new entry is
    /// appended; every other element stays as it was.
    public mutating func setBlob(_ data: [UInt8], key: [UInt8]) throws(CTAP2Error) {
        let entry = try LargeBlobEntry.seal(data, key: key)
        removeEntries(key: key)
        elements.append(entry.cbor)
    }
}
