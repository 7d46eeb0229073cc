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

    /// No metadata.
    public init() {}

    /// What `cache` holds now; a damaged cache gives no payload and says why in ``problem``.
    public static func load(from cache: MetadataCache) -> FleetMetadata {
        var metadata = FleetMetadata()
        do throws(WebAuthnVerificationError) {
            guard let blob = try cache.load() else { return metadata }
            metadata.payload = blob.payload
            metadata.nextUpdate = blob.payload.nextUpdateDate
            metadata.storedAt = try cache.record()?.storedAt
        } catch {
            metadata.problem = error.message
        }
        return metadata
    }

    /// How long ago the cached BLOB was stored, at `now`; nil without a cache.
    public func age(at now: Date) -> TimeInterval? {
        storedAt.map { max(0, now.timeIntervalSince($0)) }
    }

    /// Whether the BLOB's `nextUpdate` has passed at `now` (a newer BLOB should exist); nil
    /// without a cache.
    public func isStale(at now: Date) -> Bool? {
        guard payload != nil else { return nil }
        return nextUpdate.map { now >= $0 } ?? true
    }
}
