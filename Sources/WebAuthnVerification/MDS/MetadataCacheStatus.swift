import CBOR
import FoundationEssentials

/// How current the metadata cache is at a moment: which BLOB it holds, when it was stored, and
/// whether the BLOB's `nextUpdate` (FIDO MDS3 §3.1.6) has passed, so that a newer BLOB should
/// exist. Read from the cache's record alone (no BLOB parsed): cheap enough for every `verify`,
/// `fleet` run and refresh timer, and the source of the cache's metrics.
public struct MetadataCacheStatus: Sendable, Hashable {
    /// The cached BLOB's serial number.
    public var no: Int
    /// The cached BLOB's nextUpdate, `YYYY-MM-DD` as published.
    public var nextUpdate: String
    /// `nextUpdate` as UTC midnight; nil when it is not a date.
    public var nextUpdateDate: Date?
    /// When the BLOB was verified and stored.
    public var storedAt: Date
    /// The moment this status describes.
    public var now: Date
    /// How far the signing chain's revocation was checked when it was stored
    /// (``RevocationCheck/Status``), nil when unknown.
    public var revocation: RevocationCheck.Status?

    /// Creates the status of `record` at `now`.
    public init(record: MetadataCache.Record, now: Date = Date()) {
        no = record.no
        nextUpdate = record.nextUpdate
        nextUpdateDate = MetadataDate.parse(record.nextUpdate)
        storedAt = record.storedAt
        self.now = now
        revocation = record.revocation.flatMap(RevocationCheck.Status.init(rawValue:))
    }

    /// Seconds since the BLOB was stored (never negative).
    public var age: TimeInterval { max(0, now.timeIntervalSince(storedAt)) }

    /// Whether `nextUpdate` has passed (or cannot be read): the data is stale, a newer BLOB is
    /// due and the refresh should fetch it.
    public var isStale: Bool { nextUpdateDate.map { now >= $0 } ?? true }

    /// The age in words: "3 minutes", "2 hours", "5 days".
    public var ageText: String {
        let seconds = Int(age)
        let (value, unit) =
            seconds < 120
            ? (seconds, "second")
            : seconds < 7200
                ? (seconds / 60, "minute")
                : seconds < 172_800 ? (seconds / 3600, "hour") : (seconds / 86400, "day")
        return "\(value) \(unit)\(value == 1 ? "" : "s")"
    }

    /// One line for people: "Metadata: BLOB no 122, cached 2 days ago, next update 2025-01-01."
    public var summary: String {
        "Metadata: BLOB no \(no), cached \(ageText) ago, next update \(nextUpdate)\(isStale ? " (passed)" : "")."
    }

    /// The warning to show when the data is stale; nil when it is current.
    public var warning: String? {
        guard isStale else { return nil }
        return "the cached metadata (BLOB no \(no)) is past its nextUpdate (\(nextUpdate)); "
            + "run `securitykey mds update`."
    }

    /// `{"no", "nextUpdate", "storedAt", "ageSeconds", "stale", "revocation"}`: the `metadata`
    /// member of `verify --json` and `mds status --json` (Docs/CLI.md).
    public var json: JSONValue {
        .object([
            ("no", .integer(Int64(no))),
            ("nextUpdate", .string(nextUpdate)),
            ("storedAt", .string(Date.ISO8601FormatStyle().format(storedAt))),
            ("ageSeconds", .integer(Int64(age))),
            ("stale", .bool(isStale)),
            ("revocation", revocation.map { .string($0.rawValue) } ?? .null),
        ])
    }
}

extension MetadataCache {
    /// The cache's status at `now`; nil when nothing is cached.
    public func status(at now: Date = Date()) throws(WebAuthnVerificationError) -> MetadataCacheStatus? {
        try record().map { MetadataCacheStatus(record: $0, now: now) }
    }
}
