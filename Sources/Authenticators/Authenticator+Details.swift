import _SecurityKeyInternals
import CBOR
import CTAP2
import Transport

/// What a key tells about itself beside its getInfo: its PIN and built-in UV retries, and what a
/// stored persistent token decrypts (encIdentifier and encCredStoreState, CTAP 2.2/2.3).
public struct AuthenticatorDetails: Sendable {
    /// The key's getInfo.
    public var info: AuthenticatorInfo
    /// The PIN retries, for a key with a PIN feature that answered.
    public var pinRetries: ClientPIN.PINRetries?
    /// The built-in UV retries, for a key with a PIN feature and built-in UV that answered.
    public var uvRetries: Int?
    /// Whether a stored persistent token fits the key.
    public var storedToken: Bool
    /// The key's identifier, decrypted with the stored token.
    public var identifier: [UInt8]?
    /// The key's credential store state, decrypted with the stored token.
    public var credentialStoreState: [UInt8]?

    /// ``identifier`` in lower-case hex.
    public var identifierHex: String? { identifier.map { Hex.encode($0) } }

    /// The getInfo document (``AuthenticatorInfo/json(device:model:pinRetries:uvRetries:)``)
    /// followed by `storedToken`, `identifier` and `credStoreState` (hex, or null).
    public func json(device: String, model: String?) -> JSONValue {
        let document = info.json(device: device, model: model, pinRetries: pinRetries, uvRetries: uvRetries)
        guard case .object(var members) = document else { return document }
        members.append(("storedToken", .bool(storedToken)))
        members.append(("identifier", identifierHex.map(JSONValue.string) ?? .null))
        members.append(("credStoreState", credentialStoreState.map { .string(Hex.encode($0)) } ?? .null))
        return .object(members)
    }
}

extension Authenticator {
    /// Reads ``AuthenticatorDetails``: the retries (left nil when the key does not answer:
    /// they only inform) and, for a key with perCredMgmtRO and a record in `tokenStore` that
    /// fits it, what its stored token decrypts. `events` hears what happened to the record
    /// (``PersistentTokenStore/lookup(_:events:)``). No PIN is asked.
    public func details(
        tokenStore: PersistentTokenStore?, events: @Sendable (StoredTokenEvent) -> Void = { _ in }, deadline: Deadline
    ) async -> AuthenticatorDetails {
        var details = AuthenticatorDetails(info: info, storedToken: false)
        if info.options.isSupported(.clientPIN) {
            details.pinRetries = try? await pinRetries(deadline: deadline)
            if info.options.isSupported(.userVerification) { details.uvRetries = try? await uvRetries(deadline: deadline) }
        }
        if info.options.isEnabled(.perCredentialManagementReadOnly), let tokenStore,
            let stored = await tokenStore.lookup(self, events: events)
        {
            details.storedToken = true
            details.identifier = stored.identifier
            details.credentialStoreState = credentialStoreState(using: stored.record)
        }
        return details
    }
}
