import CBOR
import Crypto

/// One per-credential entry of the large-blob array (CTAP 2.1 §6.10.3 "large-blob map"):
/// `{1: ciphertext, 2: nonce, 3: origSize}`, the plaintext raw-DEFLATE-compressed and sealed
/// with AES-256-GCM under the credential's largeBlobKey, with "blob" ‖ uint64LE(origSize) as
/// associated data.
public struct LargeBlobEntry: Hashable, Sendable {
    /// The CBOR keys of an entry.
    public enum Key {
        /// ciphertext (0x01): the compressed data, encrypted, with the 16-byte GCM tag at its end.
        public static let ciphertext: CBORValue = 0x01
        /// nonce (0x02): 12 random bytes.
        public static let nonce: CBORValue = 0x02
        /// origSize (0x03): the length of the data before compression.
        public static let originalSize: CBORValue = 0x03
    }

    /// The length of an AES-GCM nonce here.
    public static let nonceLength = 12
    /// The length of the AES-GCM tag at the end of the ciphertext.
    public static let tagLength = 16
    /// The length of a largeBlobKey (AES-256).
    public static let keyLength = 32
    /// The most bytes an entry is inflated to, whatever its origSize says: far beyond what a
    /// key's storage (a few kilobytes of compressed data) holds for real data.
    public static let maxOriginalSize = 4 << 20

    /// The compressed data, encrypted, followed by the GCM tag.
    public var ciphertext: [UInt8]
    /// The AES-GCM nonce.
    public var nonce: [UInt8]
    /// The length of the data before compression.
    public var originalSize: UInt64

    /// Creates an entry from its members, unchecked.
    public init(ciphertext: [UInt8], nonce: [UInt8], originalSize: UInt64) {
        self.ciphertext = ciphertext
        self.nonce = nonce
        self.originalSize = originalSize
    }

    /// Reads an array element as an entry; nil when it is not a well-formed one (the spec has
    /// platforms skip such elements and keep them).
    public init?(cbor value: CBORValue) {
        guard let map = value.mapValue,
            let ciphertext = map[Key.ciphertext]?.bytesValue, ciphertext.count >= Self.tagLength,
            let nonce = map[Key.nonce]?.bytesValue, nonce.count == Self.nonceLength,
            let size = map[Key.originalSize]?.uint64Value
        else { return nil }
        self.init(ciphertext: ciphertext, nonce: nonce, originalSize: size)
    }

    /// The entry as an element of the array.
    public var cbor: CBORValue {
        .map([
            Key.ciphertext: .byteString(ciphertext), Key.nonce: .byteString(nonce),
            Key.originalSize: .unsigned(originalSize),
        ])
    }

    /// The associated data: "blob" ‖ uint64LE(origSize).
    static func associatedData(originalSize: UInt64) -> [UInt8] {
        Array("blob".utf8) + (0..<8).map { UInt8(truncatingIfNeeded: originalSize >> (8 * $0)) }
    }

    /// Compresses and seals `data` under `key` with a fresh random nonce (or `nonce`, for tests
    /// that need fixed bytes).
    public static func seal(_ data: [UInt8], key: [UInt8], nonce: [UInt8]? = nil) throws(CTAP2Error)
        -> LargeBlobEntry
    {
        guard key.count == keyLength else {
            throw .invalidRequest("A largeBlobKey is \(keyLength) bytes, not \(key.count).")
        }
        guard data.count <= maxOriginalSize else {
            throw .invalidRequest("A large blob holds at most \(maxOriginalSize) bytes, not \(data.count).")
        }
        let compressed: [UInt8]
        do throws(RawDeflate.Failure) {
            compressed = try RawDeflate.compress(data)
        } catch {
            throw CTAP2Error(.invalidRequest, "The large blob could not be compressed (\(error)).")
        }
        let size = UInt64(data.count)
        do {
            let gcmNonce = try nonce.map { try AES.GCM.Nonce(data: $0) } ?? AES.GCM.Nonce()
            let box = try AES.GCM.seal(
                compressed, using: SymmetricKey(data: key), nonce: gcmNonce,
                authenticating: associatedData(originalSize: size))
            return LargeBlobEntry(
                ciphertext: Array(box.ciphertext) + Array(box.tag), nonce: Array(gcmNonce),
                originalSize: size)
        } catch {
            throw CTAP2Error(.invalidRequest, "The large blob could not be encrypted.", underlying: error)
        }
    }

    /// What opening an entry with one key gives.
    public enum Opened: Hashable, Sendable {
        /// The entry is sealed under another key (another credential's, or not a credential's).
        case otherKey
        /// The entry is sealed under this key but its content is damaged: it does not inflate,
        /// or not to origSize bytes, or origSize is beyond ``LargeBlobEntry/maxOriginalSize``.
        case damaged(String)
        /// The data.
        case data([UInt8])

        /// Whether the entry was sealed under the key (AES-GCM authenticated it).
        public var isThisKey: Bool {
            if case .otherKey = self { return false }
            return true
        }
    }

    /// Decrypts and inflates the entry with `key`.
    public func open(key: [UInt8]) -> Opened {
        guard key.count == Self.keyLength, ciphertext.count >= Self.tagLength else { return .otherKey }
        let compressed: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonce), ciphertext: ciphertext.dropLast(Self.tagLength),
                tag: ciphertext.suffix(Self.tagLength))
            compressed = Array(
                try AES.GCM.open(
                    box, using: SymmetricKey(data: key),
                    authenticating: Self.associatedData(originalSize: originalSize)))
        } catch {
            return .otherKey
        }
        guard originalSize <= UInt64(Self.maxOriginalSize) else {
            return .damaged("its origSize of \(originalSize) bytes is beyond the \(Self.maxOriginalSize) read")
        }
        let data: [UInt8]
        do throws(RawDeflate.Failure) {
            data = try RawDeflate.decompress(compressed, limit: Int(originalSize))
        } catch {
            return .damaged("it does not inflate to its origSize of \(originalSize) bytes")
        }
        guard data.count == Int(originalSize) else {
            return .damaged("it inflates to \(data.count) bytes, not its origSize of \(originalSize)")
        }
        return .data(data)
    }
}
