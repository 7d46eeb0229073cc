import _SecurityKeyInternals
import CTAP2
import Transport

/// A relying party with its discoverable credentials on a key.
public struct RelyingPartyCredentials: Hashable, Sendable {
    /// The relying party.
    public var relyingParty: CredentialManagement.RelyingParty
    /// Its credentials.
    public var credentials: [CredentialManagement.Credential]

    /// Creates a listing.
    public init(
        relyingParty: CredentialManagement.RelyingParty, credentials: [CredentialManagement.Credential]
    ) {
        self.relyingParty = relyingParty
        self.credentials = credentials
    }
}

/// Discoverable credentials (CTAP 2.1 §6.8) through the device layer: each method verifies the
/// user for a token with the cm permission, runs its whole sequence with that one token and
/// wipes it.
///
/// Where the caller names a relying party and the key issues tokens with permissions
/// (`pinUvAuthToken`), the token is bound to that RP ID (§6.5.5.7: a cm token with a
/// permissions RP ID can only enumerate, delete and update that RP's credentials), so a
/// token that leaks cannot touch other accounts. Listing every RP, and deleting by ID alone,
/// need an unbound token.
extension Authenticator {
    /// Whether the key offers credential management (full or FIDO_2_1_PRE preview).
    public var supportsCredentialManagement: Bool { CredentialManagementRequest.command(for: info) != nil }

    /// Runs `body` with a ``CredentialManagement`` holding a fresh cm token (bound to `rpID`
    /// where given and supported), then wipes the token, whatever `body` did. With
    /// `storedToken` (a persistent token, for reading only) no user is asked; the key refusing
    /// it is ``AuthenticatorError/Code/storedTokenInvalid``.
    @discardableResult
    public func withCredentialManagement<T: Sendable>(
        rpID: String? = nil, storedToken: PINUVAuthToken? = nil, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline, _ body: @Sendable (CredentialManagement) async throws(CTAP2Error) -> T
    ) async throws(AuthenticatorError) -> T {
        guard supportsCredentialManagement else {
            throw AuthenticatorError(
                .notSupported, "The security key does not support credential management.", deviceURI: uri)
        }
        if let storedToken { return try await withStoredTokenCredentialManagement(storedToken, deadline: deadline, body) }
        // One ceremony: the key is held from the token to the last command (Authenticator+Ceremony.swift).
        return try await withCeremony { () throws(AuthenticatorError) -> T in
            let token = try await credentialManagementToken(
                rpID: rpID, interaction: interaction, deadline: deadline)
            defer { token.wipe() }
            do throws(CTAP2Error) {
                let manager = try CredentialManagement(session: session, info: info, token: token, logger: logger)
                return try await body(manager)
            } catch {
                throw AuthenticatorError(error, deviceURI: uri)
            }
        }
    }

    /// How many discoverable credentials the key holds and how many more fit.
    public func credentialMetadata(
        storedToken: PINUVAuthToken? = nil, interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) -> CredentialManagement.Metadata {
        try await withCredentialManagement(storedToken: storedToken, interaction: interaction, deadline: deadline) {
            (manager) throws(CTAP2Error) in
            try await manager.metadata(deadline: deadline)
        }
    }

    /// Every relying party on the key with its discoverable credentials, read with one token.
    public func discoverableCredentials(
        storedToken: PINUVAuthToken? = nil, interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) -> [RelyingPartyCredentials] {
        try await withCredentialManagement(storedToken: storedToken, interaction: interaction, deadline: deadline) {
            (manager) throws(CTAP2Error) in
            var out: [RelyingPartyCredentials] = []
            for party in try await manager.relyingParties(deadline: deadline) {
                let credentials = try await manager.credentials(rpIDHash: party.rpIDHash, deadline: deadline)
                out.append(RelyingPartyCredentials(relyingParty: party, credentials: credentials))
            }
            return out
        }
    }

    /// The discoverable credentials of one relying party, with a token bound to it where the
    /// key allows.
    public func discoverableCredentials(
        rpID: String, storedToken: PINUVAuthToken? = nil, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline
    ) async throws(AuthenticatorError) -> [CredentialManagement.Credential] {
        try await withCredentialManagement(
            rpID: rpID, storedToken: storedToken, interaction: interaction, deadline: deadline
        ) {
            (manager) throws(CTAP2Error) in
            try await manager.credentials(rpID: rpID, deadline: deadline)
        }
    }

    /// Deletes the discoverable credential with this ID; `rpID`, where known, binds the token
    /// to its relying party.
    public func deleteCredential(
        id: [UInt8], rpID: String? = nil, interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) {
        try await withCredentialManagement(rpID: rpID, interaction: interaction, deadline: deadline) {
            (manager) throws(CTAP2Error) in
            try await manager.deleteCredential(id: id, deadline: deadline)
        }
    }

    /// Replaces the user name and display name stored with a discoverable credential
    /// (updateUserInformation; keys with only the preview command cannot).
    public func updateUserInformation(
        credentialID: [UInt8], user: UserEntity, rpID: String? = nil,
        interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline
    ) async throws(AuthenticatorError) {
        guard CredentialManagementRequest.command(for: info) != .credentialManagementPreview else {
            throw AuthenticatorError(
                .notSupported,
                "The security key offers only the preview of credential management, which cannot update user information.",
                deviceURI: uri)
        }
        try await withCredentialManagement(rpID: rpID, interaction: interaction, deadline: deadline) {
            (manager) throws(CTAP2Error) in
            try await manager.updateUserInformation(
                credentialID: credentialID, user: user, deadline: deadline)
        }
    }

    /// A cm token: built-in UV or the PIN as ``verifyUser(permissions:rpID:interaction:deadline:)``
    /// chooses; a key with built-in UV but no token support is asked for its PIN instead, since
    /// credential management needs a token.
    func credentialManagementToken(
        rpID: String?, interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) -> PINUVAuthToken {
        // A permissions RP ID only means something with getPinUvAuthTokenUsing…WithPermissions.
        let boundRPID = info.options.isEnabled(.pinUVAuthToken) ? rpID : nil
        switch try await verifyUser(
            permissions: [.credentialManagement], rpID: boundRPID, interaction: interaction,
            deadline: deadline)
        {
        case .token(let token): return token
        case .uvOption, .none:
            return try await pinToken(
                permissions: [.credentialManagement], rpID: boundRPID, interaction: interaction,
                deadline: deadline)
        }
    }
}

/// What `securitykey credentials list` and `update` do, for any caller.
extension Authenticator {
    /// The discoverable credentials by relying party, sorted by RP ID: those of `rpID` (with a
    /// token bound to it where the key allows), or of every relying party.
    public func credentialsByRelyingParty(
        rpID: String?, storedToken: PINUVAuthToken? = nil, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline
    ) async throws(AuthenticatorError)
        -> [(relyingParty: RelyingPartyEntity, credentials: [CredentialManagement.Credential])]
    {
        if let rpID {
            let credentials = try await discoverableCredentials(
                rpID: rpID, storedToken: storedToken, interaction: interaction, deadline: deadline)
            return [(RelyingPartyEntity(id: rpID), credentials)]
        }
        return try await discoverableCredentials(storedToken: storedToken, interaction: interaction, deadline: deadline)
            .map { ($0.relyingParty.entity, $0.credentials) }
            .sorted { $0.0.id < $1.0.id }
    }

    /// Changes the user name, the display name or both (nil: kept) stored with the discoverable
    /// credential `credentialID`, found among every relying party's with one token; answers the
    /// user entity now stored. `no-credentials` when the key holds no such credential.
    public func updateUser(
        credentialID: [UInt8], name: String?, displayName: String?, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline
    ) async throws(AuthenticatorError) -> UserEntity {
        try await withCredentialManagement(interaction: interaction, deadline: deadline) {
            (manager) throws(CTAP2Error) -> UserEntity in
            for party in try await manager.relyingParties(deadline: deadline) {
                let credentials = try await manager.credentials(rpIDHash: party.rpIDHash, deadline: deadline)
                guard let found = credentials.first(where: { $0.credentialID.id == credentialID }) else { continue }
                let updated = UserEntity(
                    id: found.user.id, name: name ?? found.user.name,
                    displayName: displayName ?? found.user.displayName)
                try await manager.updateUserInformation(credentialID: credentialID, user: updated, deadline: deadline)
                return updated
            }
            throw CTAP2Error(
                .noCredentials,
                "The key holds no discoverable credential with the ID \(Base64URL.encode(credentialID)).")
        }
    }
}
