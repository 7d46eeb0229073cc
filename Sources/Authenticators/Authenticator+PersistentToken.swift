import CTAP2
import Transport

/// What a ``PersistentTokenStore`` holds for one key.
public enum StoredTokenLookup: Sendable {
    /// Nothing: no record of this key, or the key offers no persistent token.
    case none
    /// A record whose token fits the key, with the identifier it decrypted the key's
    /// encIdentifier to (nil for a key without one).
    case found(PersistentTokenStore.Record, identifier: [UInt8]?)
    /// Records saved through this device URI from a key of this AAGUID whose tokens no longer
    /// fit: the PIN was changed or the key reset since.
    case stale([PersistentTokenStore.Record])
}

/// The persistent PinUvAuthToken (CTAP 2.2 pcmr, getInfo option `perCredMgmtRO`): obtained once
/// with the PIN, kept in a ``PersistentTokenStore``, then used without a PIN for read-only
/// credential management and to decrypt encIdentifier and encCredStoreState.
extension Authenticator {
    /// Whether the key issues persistent tokens (`perCredMgmtRO`).
    public var supportsPersistentToken: Bool { info.options.isEnabled(.perCredentialManagementReadOnly) }

    /// Asks the PIN through `interaction` (again after a wrong one, while attempts remain), obtains
    /// a persistent token, decrypts the key's encIdentifier with it and saves it in `store`
    /// (replacing this key's earlier record). `savedAt` is the time recorded (seconds since 1970).
    public func savePersistentToken(
        in store: PersistentTokenStore, savedAt: Int64, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline
    ) async throws(AuthenticatorError) -> PersistentTokenStore.Record {
        guard supportsPersistentToken else {
            throw AuthenticatorError(
                .notSupported, "The security key offers no persistent PIN/UV token (perCredMgmtRO).", deviceURI: uri)
        }
        let token = try await withCeremony { () throws(AuthenticatorError) -> PINUVAuthToken in
            try await pinToken(
                permissions: .persistentCredentialManagementReadOnly, rpID: nil, interaction: interaction,
                deadline: deadline)
        }
        defer { token.wipe() }
        // encIdentifier is encrypted afresh in every getInfo; the one read at open time will do,
        // but a PIN just set or changed by this program replaced the token, so read it again.
        let fresh = try await refreshInfo(deadline: deadline)
        let record: PersistentTokenStore.Record
        do throws(CTAP2Error) {
            var bytes = try token.persistentTokenBytes()
            defer { bytes.wipe() }
            record = PersistentTokenStore.Record(
                aaguid: fresh.aaguid, identifier: try fresh.identifier(decryptingWith: token), deviceURI: uri,
                pinUVAuthProtocol: token.pinUVAuthProtocol.version, savedAt: savedAt, token: bytes)
        } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
        try store.save(record)
        return record
    }

    /// The record of `store` that fits this key, or the stale ones saved from it.
    public func storedToken(in store: PersistentTokenStore) throws(AuthenticatorError) -> StoredTokenLookup {
        guard supportsPersistentToken else { return .none }
        var stale: [PersistentTokenStore.Record] = []
        for record in try store.records() where record.aaguid == info.aaguid {
            if let identifier = record.identifier {
                let token = record.pinUVAuthToken()
                defer { token.wipe() }
                // A token the key no longer holds decrypts to other bytes (AES-CBC has no MAC).
                if let decrypted = try? info.identifier(decryptingWith: token), decrypted == identifier {
                    return .found(record, identifier: identifier)
                }
                if record.deviceURI == uri { stale.append(record) }
            } else if info.encIdentifier == nil, record.deviceURI == uri {
                return .found(record, identifier: nil)
            }
        }
        return stale.isEmpty ? .none : .stale(stale)
    }

    /// The credential store state (encCredStoreState) decrypted with a record that fits this key.
    public func credentialStoreState(using record: PersistentTokenStore.Record) -> [UInt8]? {
        let token = record.pinUVAuthToken()
        defer { token.wipe() }
        return try? info.credentialStoreState(decryptingWith: token)
    }

    /// Runs `body` with a ``CredentialManagement`` on a stored persistent token (the caller's;
    /// not wiped here). The key refusing it (PIN_AUTH_INVALID: the PIN was changed or the key
    /// reset) is ``AuthenticatorError/Code/storedTokenInvalid``; no PIN attempt is spent.
    func withStoredTokenCredentialManagement<T: Sendable>(
        _ token: PINUVAuthToken, deadline: Deadline,
        _ body: @Sendable (CredentialManagement) async throws(CTAP2Error) -> T
    ) async throws(AuthenticatorError) -> T {
        do throws(CTAP2Error) {
            let manager = try CredentialManagement(session: session, info: info, token: token, logger: logger)
            return try await body(manager)
        } catch where error.code == .pinAuthInvalid || error.code == .pinTokenExpired {
            throw AuthenticatorError(
                .storedTokenInvalid,
                "The stored token is no longer valid for this key (its PIN was changed or it was reset).",
                deviceURI: uri, underlying: error)
        } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }
}
