import _SecurityKeyInternals
import CBOR
import CTAP2
import FoundationEssentials

/// What happened to a stored token while a key was read with it, for the user to be told.
public enum StoredTokenEvent: Sendable {
    /// A record fits the key and is used: no PIN is asked.
    case using
    /// The key's records no longer fit (its PIN was changed or it was reset) and were removed;
    /// the key is read without a stored token.
    case removedStale
    /// The store could not be read or written; the key is read without it.
    case storeFailed(AuthenticatorError)
}

extension PersistentTokenStore {
    /// The record that fits `key`, if any. Stale records of the key are removed; a damaged
    /// store is reported through `events` and ignored.
    public func lookup(_ key: Authenticator, events: (StoredTokenEvent) -> Void) async
        -> (record: Record, identifier: [UInt8]?)?
    {
        do {
            switch try await key.storedToken(in: self) {
            case .none:
                return nil
            case .found(let record, let identifier):
                events(.using)
                return (record, identifier)
            case .stale(let records):
                try remove { record in records.contains(record) }
                events(.removedStale)
                return nil
            }
        } catch {
            events(.storeFailed(error))
            return nil
        }
    }

    /// Runs `read` with the stored token that fits `key`, or with none; when the key refuses
    /// the stored token (``AuthenticatorError/Code/storedTokenInvalid``) the record is removed,
    /// reported as ``StoredTokenEvent/removedStale``, and `read` runs again without it (asking
    /// for the PIN as usual). No PIN attempt is spent on the stored token. Returns the result
    /// and whether the stored token served.
    public func read<T: Sendable>(
        _ key: Authenticator, events: (StoredTokenEvent) -> Void, _ read: (PINUVAuthToken?) async throws -> T
    ) async throws -> (result: T, storedToken: Bool) {
        guard let (record, _) = await lookup(key, events: events) else { return (try await read(nil), false) }
        let token = record.pinUVAuthToken()
        defer { token.wipe() }
        do {
            return (try await read(token), true)
        } catch let error as AuthenticatorError where error.code == .storedTokenInvalid {
            _ = try? remove { $0 == record }
            events(.removedStale)
            return (try await read(nil), false)
        }
    }
}

extension PersistentTokenStore {
    /// Removes the records of `key`: the one that fits it, else its stale ones (its PIN was
    /// changed or it was reset), else any saved through its URI for its AAGUID. Returns how
    /// many went.
    public func forget(_ key: Authenticator) async throws(AuthenticatorError) -> Int {
        switch try await key.storedToken(in: self) {
        case .found(let record, _): return try remove { $0 == record }
        case .stale(let records): return try remove { records.contains($0) }
        case .none:
            let aaguid = await key.info.aaguid
            return try remove { $0.aaguid == aaguid && $0.deviceURI == key.uri }
        }
    }
}

extension PersistentTokenStore.Record {
    /// The record as `token list --json` gives it: {aaguid, identifier (hex or null), device,
    /// pinUvAuthProtocol, savedAt (ISO 8601, UTC)}; never the token.
    public var json: JSONValue {
        .members([
            ("aaguid", .string(aaguid.description.lowercased())),
            ("identifier", identifier.map { .string(Hex.encode($0)) } ?? .null),
            ("device", .string(deviceURI)), ("pinUvAuthProtocol", .integer(Int64(pinUVAuthProtocol))),
            ("savedAt", .string(savedAtText)),
        ])
    }

    /// When it was saved, in ISO 8601 (UTC).
    public var savedAtText: String { Date(timeIntervalSince1970: Double(savedAt)).formatted(.iso8601) }
}
