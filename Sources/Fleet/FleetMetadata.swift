import FoundationEssentials
import WebAuthnVerification

/// The metadata (MDS) cache a fleet run judges its keys by: the payload, when it was stored and
/// when the next BLOB is due, so that a run can say how old its trust data is.
public struct FleetMetadata: Sendable {
    /// The cached BLOB's payload; nil when there is no cache or it cannot be read.
    public var payload: MetadataBLOBPayload?
    /// When the cached BLOB was verified and stored.
    public var storedAt: Date?
    /// When the BLOB says the next one is due (its `nextUpdate`).
    public var nextUpdate: Date?
    /// Why the cache could not be read, when it exists but could not.
    public var problem: String?
    /// The cache's record (the BLOB's number, nextUpdate, when it was stored, how far its
    /// signing chain's revocation was checked); nil without a cache.
    public var record: MetadataCache.Record?

    /// No metadata.
    public init() {}

    /// What `cache` holds now; a damaged cache gives no payload and says why in ``problem``.
    public static func load(from cache: MetadataCache) -> FleetMetadata {
        var metadata = FleetMetadata()
        do throws(WebAuthnVerificationError) {
            guard let blob = try cache.load() else { return metadata }
            metadata.payload = blob.payload
            metadata.nextUpdate = blob.payload.nextUpdateDate
            metadata.record = try cache.record()
            metadata.storedAt = metadata.record?.storedAt
        } catch {
            metadata.problem = error.message
        }
        return metadata
    }

    /// How long ago the cached BLOB was stored, at `now`; nil without a cache.
    public func age(at now: Date) -> TimeInterval? {
        storedAt.map { max(0, now.timeIntervalSince($0)) }
    }

    /// How current the cache is at `now` (its age, and whether its nextUpdate has passed): each
    /// row's `metadata` member; nil without a readable cache.
    public func status(at now: Date) -> MetadataCacheStatus? {
        guard payload != nil else { return nil }
        return record.map { MetadataCacheStatus(record: $0, now: now) }
    }

    /// Whether the BLOB's `nextUpdate` has passed at `now` (a newer BLOB should exist); nil
    /// without a cache.
    public func isStale(at now: Date) -> Bool? {
        guard payload != nil else { return nil }
        return nextUpdate.map { now >= $0 } ?? true
    }
}
