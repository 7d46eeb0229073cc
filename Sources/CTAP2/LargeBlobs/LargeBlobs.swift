import CBOR
import Logging
import Transport

/// The platform side of authenticatorLargeBlobs (CTAP 2.1 §6.10): the key's serialized
/// large-blob array read and written in fragments, and the per-credential entries in it.
///
/// Reads need no token. Writes carry a pinUvAuthParam from a token with the `lbw` permission
/// when the key is protected by a PIN or built-in UV; an unprotected key takes them without one
/// (§6.10.2 step 5). Fragments are at most maxMsgSize − 64 bytes (§6.10.2 "maxFragmentLength").
/// A write is checked against maxSerializedLargeBlobArray before anything is sent. A corrupted
/// array on the key is never overwritten unless the caller forces it: the per-credential
/// methods take `force`.
public struct LargeBlobs: Sendable {
    /// The session commands go through.
    public let session: CTAP2Session
    /// The getInfo response the limits come from.
    public let info: AuthenticatorInfo
    /// The token with the lbw permission that authenticates writes, if any.
    public let token: PINUVAuthToken?
    private let logger: Logger

    /// The space CTAP 2.1 §6.10.2 keeps for the rest of a message: maxFragmentLength =
    /// maxMsgSize − 64.
    public static let messageOverhead = 64
    /// maxSerializedLargeBlobArray when getInfo leaves it out (CTAP 2.1 §6.4: at least 1024).
    public static let defaultMaxSerializedLength = 1024

    /// Uses the key described by `info`, with `token` for writes; fails when the key does not
    /// offer large blobs (getInfo option `largeBlobs`).
    public init(
        session: CTAP2Session, info: AuthenticatorInfo, token: PINUVAuthToken? = nil,
        logger: Logger = Logger(label: "securitykey.ctap2.largeblobs")
    ) throws(CTAP2Error) {
        guard info.options.isEnabled(.largeBlobs) else {
            throw CTAP2Error(.unsupportedOption, "The key does not offer large-blob storage.")
        }
        if let token { try token.check(permission: .largeBlobWrite, rpID: nil) }
        self.session = session
        self.info = info
        self.token = token
        self.logger = logger
    }

    /// The most bytes one request reads or writes: maxMsgSize − 64.
    public var maxFragmentLength: Int {
        let maxMsgSize = info.maxMsgSize.map { Int(clamping: $0) } ?? CTAP2Session.defaultMaxMessageSize
        return max(maxMsgSize - Self.messageOverhead, 1)
    }

    /// The largest serialized array the key stores (getInfo maxSerializedLargeBlobArray).
    public var maxSerializedLength: Int {
        info.maxSerializedLargeBlobArray.map { Int(clamping: $0) } ?? Self.defaultMaxSerializedLength
    }

    // MARK: The whole array

    /// The serialized array as the key holds it, read in fragments. The key may not send more
    /// than its own maximum (or than this library parses).
    public func readSerialized(deadline: Deadline? = nil) async throws(CTAP2Error) -> [UInt8] {
        let fragment = maxFragmentLength
        let cap = min(max(maxSerializedLength, LargeBlobArray.minimumSerializedLength), LargeBlobArray.maxSerializedLength)
        var out: [UInt8] = []
        while true {
            let response = try await session.send(
                LargeBlobsRequest.get(offset: out.count, count: fragment), deadline: deadline)
            guard let bytes = response.config else {
                throw CTAP2Error.malformed("The largeBlobs reply to a read lacks its config.")
            }
            guard bytes.count <= fragment else {
                throw CTAP2Error.malformed(
                    "The key answered a read of \(fragment) large-blob bytes with \(bytes.count).")
            }
            out += bytes
            guard out.count <= cap else {
                throw CTAP2Error.malformed(
                    "The key's large-blob array is longer than the \(cap) bytes it may hold; it was not read.")
            }
            // A short fragment is the last one (§6.10.3 "reading").
            if bytes.count < fragment { break }
        }
        logger.debug("large-blob array read", metadata: ["bytes": "\(out.count)"])
        return out
    }

    /// The array, checked: a corrupted one reads as empty, with the reason
    /// (``LargeBlobArray/Reading/corruption``).
    public func readArray(deadline: Deadline? = nil) async throws(CTAP2Error) -> LargeBlobArray.Reading {
        let reading = LargeBlobArray.parse(try await readSerialized(deadline: deadline))
        if let corruption = reading.corruption {
            logger.info("the key's large-blob array is corrupted", metadata: ["reason": "\(corruption.code)"])
        }
        return reading
    }

    /// Replaces the key's array with `array`, in fragments; refuses, before sending anything,
    /// an array larger than maxSerializedLargeBlobArray.
    public func write(_ array: LargeBlobArray, deadline: Deadline? = nil) async throws(CTAP2Error) {
        try await writeSerialized(array.serialized(), deadline: deadline)
    }

    /// Writes serialized bytes as they are (the key checks the trailing hash): for tests and
    /// for restoring a saved array.
    public func writeSerialized(_ bytes: [UInt8], deadline: Deadline? = nil) async throws(CTAP2Error) {
        guard bytes.count <= maxSerializedLength else {
            throw CTAP2Error(
                .largeBlobStorageFull,
                "The large-blob array would be \(bytes.count) bytes; the key stores at most \(maxSerializedLength).")
        }
        let fragment = maxFragmentLength
        var offset = 0
        repeat {
            let end = min(offset + fragment, bytes.count)
            let request = try LargeBlobsRequest.set(
                fragment: Array(bytes[offset..<end]), offset: offset, length: offset == 0 ? bytes.count : nil,
                token: token)
            _ = try await session.send(request, deadline: deadline)
            offset = end
        } while offset < bytes.count
        logger.debug("large-blob array written", metadata: ["bytes": "\(bytes.count)"])
    }

    // MARK: One credential's blob

    /// What a credential's blob read gives: the data (nil when there is none) and whether the
    /// array was corrupted (then there is none).
    public struct Lookup: Hashable, Sendable {
        /// The data, or nil when no entry for the key opens.
        public var data: [UInt8]?
        /// Why the array on the key was not accepted, if it was not.
        public var corruption: LargeBlobArray.Corruption?
        /// Why an entry sealed under the key could not be read, if one could not.
        public var damage: String?

        /// The blob `reading` holds for the credential whose largeBlobKey is `key`.
        public init(_ reading: LargeBlobArray.Reading, key: [UInt8]) {
            corruption = reading.corruption
            data = reading.array.blob(key: key)
            if data == nil, case .damaged(let reason)? = reading.array.find(key: key)?.opened { damage = reason }
        }

        /// The blob's bytes, or why there are none: ``CTAP2Error/Code/largeBlobCorrupted`` when
        /// the array is corrupted (it then reads as empty), ``CTAP2Error/Code/largeBlobDamaged``
        /// when the credential's entry does not open, else ``CTAP2Error/Code/noLargeBlob``.
        /// `credential` names the credential in that last sentence as the user knows it (its ID
        /// in base64url as they gave it).
        public func requireData(credential: String) throws(CTAP2Error) -> [UInt8] {
            if let data { return data }
            if let corruption {
                throw CTAP2Error(
                    .largeBlobCorrupted,
                    "The key's large-blob array is corrupted (\(corruption)), so the credential has no readable blob.")
            }
            if let damage { throw CTAP2Error(.largeBlobDamaged, "The credential's large blob is damaged: \(damage).") }
            throw CTAP2Error(.noLargeBlob, "The credential \(credential) has no large blob.")
        }
    }

    /// The blob stored for the credential whose largeBlobKey is `key`.
    public func blob(key: [UInt8], deadline: Deadline? = nil) async throws(CTAP2Error) -> Lookup {
        Lookup(try await readArray(deadline: deadline), key: key)
    }

    /// Stores `data` for the credential whose largeBlobKey is `key`, keeping every other element
    /// of the array. A corrupted array is replaced only with `force`.
    public func setBlob(_ data: [UInt8], key: [UInt8], force: Bool = false, deadline: Deadline? = nil)
        async throws(CTAP2Error)
    {
        var array = try await writableArray(force: force, deadline: deadline)
        try array.setBlob(data, key: key)
        try await write(array, deadline: deadline)
    }

    /// Removes the entries sealed under `key`, keeping the rest; returns how many there were
    /// (nothing is written when there were none). A corrupted array is replaced only with `force`.
    @discardableResult
    public func deleteBlob(key: [UInt8], force: Bool = false, deadline: Deadline? = nil)
        async throws(CTAP2Error) -> Int
    {
        let reading = try await readArray(deadline: deadline)
        if reading.isCorrupted && force {
            // Forcing over a corrupted array leaves the empty array it reads as.
            try await write(.empty, deadline: deadline)
            return 0
        }
        var array = try Self.writable(reading, force: force)
        let removed = array.removeEntries(key: key)
        if removed > 0 { try await write(array, deadline: deadline) }
        return removed
    }

    private func writableArray(force: Bool, deadline: Deadline?) async throws(CTAP2Error) -> LargeBlobArray {
        try Self.writable(try await readArray(deadline: deadline), force: force)
    }

    private static func writable(_ reading: LargeBlobArray.Reading, force: Bool) throws(CTAP2Error)
        -> LargeBlobArray
    {
        if let corruption = reading.corruption, !force {
            throw CTAP2Error(
                .largeBlobCorrupted,
                "The key's large-blob array is corrupted (\(corruption)); writing would replace whatever it holds, so it is left as it is unless forced."
            )
        }
        return reading.array
    }
}
