import _SecurityKeyInternals
import Crypto
import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The local store of the last verified metadata BLOB: the BLOB exactly as received and a small
/// record of its serial number, hash and verification. Only ``store(_:bytes:source:)`` writes it,
/// and only with a ``MetadataBLOB`` (so only after verification); reading it back checks the
/// hash against the record.
public struct MetadataCache: Sendable {
    /// The directory holding the cache files.
    public var directory: URL

    /// Creates a cache in `directory` (created on first store).
    public init(directory: URL) { self.directory = directory }

    /// `$XDG_CACHE_HOME/securitykey`, or `~/.cache/securitykey`.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> URL
    {
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg).appendingPathComponent("securitykey")
        }
        let home =
            environment["HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(".cache").appendingPathComponent("securitykey")
    }

    /// The BLOB as received.
    public var blobURL: URL { directory.appendingPathComponent("mds3-blob.jwt") }
    /// The record of the stored BLOB.
    public var recordURL: URL { directory.appendingPathComponent("mds3-blob.json") }

    /// What is recorded about the stored BLOB.
    public struct Record: Codable, Sendable, Hashable {
        /// The BLOB's serial number.
        public var no: Int
        /// Its nextUpdate.
        public var nextUpdate: String
        /// SHA-256 of the stored bytes, hex.
        public var sha256: String
        /// When it was verified and stored.
        public var storedAt: Date
        /// The moment its certificates were checked at.
        public var verificationTime: Date
        /// Where it came from (URL or file).
        public var source: String?
        /// How far its signing chain's revocation was checked (``RevocationCheck/Status``'s raw
        /// value); nil when it was not attempted or for a record written before it was.
        public var revocation: String?
    }

    /// The record of the stored BLOB, if there is one.
    public func record() throws(WebAuthnVerificationError) -> Record? {
        guard let data = FileManager.default.contents(atPath: recordURL.path) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do { return try decoder.decode(Record.self, from: data) } catch {
            throw Self.failure(
                "The metadata cache record \(recordURL.path) is damaged; run `mds update` again.")
        }
    }

    /// Stores a verified BLOB, refusing one older than the stored one (no rollback).
    @discardableResult
    public func store(_ blob: MetadataBLOB, bytes: [UInt8], source: String? = nil)
        throws(WebAuthnVerificationError)
        -> Record
    {
        if let current = try record(), blob.payload.no < current.no {
            throw WebAuthnVerificationError(
                .metadataRollback,
                "The metadata BLOB is number \(blob.payload.no), older than number \(current.no) in the cache."
            )
        }
        guard Array(SHA256.hash(data: bytes)) == blob.sha256 else {
            throw WebAuthnVerificationError(
                .metadataMalformed, "These are not the bytes of the verified BLOB.")
        }
        let record = Record(
            no: blob.payload.no, nextUpdate: blob.payload.nextUpdate, sha256: Hex.encode(blob.sha256),
            storedAt: Date(),
            verificationTime: blob.verificationTime, source: source, revocation: blob.revocation?.status.rawValue)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        guard let recordBytes = try? encoder.encode(record) else {
            throw Self.failure("The metadata cache record could not be encoded.")
        }
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw Self.failure("Cannot create the metadata cache directory \(directory.path).")
        }
        // BLOB first, record last: a reader that sees the new record sees the new BLOB.
        try Self.writeAtomically(bytes, to: blobURL)
        try Self.writeAtomically(Array(recordBytes), to: recordURL)
        return record
    }

    /// The stored BLOB, re-read (its hash checked against the record), or nil if none is stored.
    public func load() throws(WebAuthnVerificationError) -> MetadataBLOB? {
        guard let record = try record() else { return nil }
        guard let data = FileManager.default.contents(atPath: blobURL.path) else {
            throw Self.failure("The metadata cache has a record but no BLOB; run `mds update` again.")
        }
        let bytes = [UInt8](data)
        let digest = Array(SHA256.hash(data: bytes))
        guard Hex.encode(digest) == record.sha256 else {
            throw Self.failure("The cached metadata BLOB does not match its record; run `mds update` again.")
        }
        let jws = try JWSCompact(bytes)
        let payload = try MetadataBLOBPayload(json: jws.payload)
        return MetadataBLOB(
            payload: payload, algorithm: jws.algorithm, signingChain: jws.x5c, trustAnchor: nil,
            verificationTime: record.verificationTime, sha256: digest)
    }

    private static func failure(_ message: String) -> WebAuthnVerificationError {
        WebAuthnVerificationError(.metadataCacheUnavailable, message)
    }

    /// Writes a file beside its destination with mode 0600, syncs it, then renames it into place.
    private static func writeAtomically(_ bytes: [UInt8], to url: URL) throws(WebAuthnVerificationError) {
        let temporary = url.path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("Cannot write \(temporary) (errno \(errno)).") }
        var written = 0
        let ok = bytes.withUnsafeBytes { raw -> Bool in
            while written < raw.count {
                let n = write(fd, raw.baseAddress.map { $0 + written }, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                written += n
            }
            return fsync(fd) == 0
        }
        close(fd)
        guard ok, rename(temporary, url.path) == 0 else {
            unlink(temporary)
            throw failure("Cannot write \(url.path).")
        }
    }
}

extension WebAuthnVerificationError.Code {
    /// The local metadata cache cannot be read or written, or is damaged.
    public static let metadataCacheUnavailable = Self(rawValue: "metadata-cache-unavailable")
}
