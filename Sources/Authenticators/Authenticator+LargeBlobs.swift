import CTAP2
import Transport

/// A discoverable credential that has a largeBlobKey, with its relying party.
public struct LargeBlobCredential: Hashable, Sendable {
    /// The relying party ID.
    public var rpID: String
    /// The credential, as credential management lists it.
    public var credential: CredentialManagement.Credential

    /// Creates a listing entry.
    public init(rpID: String, credential: CredentialManagement.Credential) {
        self.rpID = rpID
        self.credential = credential
    }

    /// The credential's largeBlobKey (every credential listed here has one).
    public var largeBlobKey: [UInt8] { credential.largeBlobKey ?? [] }
}

/// Large blobs (CTAP 2.1 §6.10) through the device layer. Reading the array needs no token;
/// writing needs one with the `lbw` permission on a key protected by a PIN or built-in UV.
/// largeBlobKeys come from credential management (enumerateCredentials, member 0x0B), so the
/// per-credential operations get one token carrying both `cm` and `lbw` and ask the user once.
/// A corrupted array on the key is reported, and overwritten only with `force`.
extension Authenticator {
    /// Whether the key offers large-blob storage (getInfo option `largeBlobs`).
    public var supportsLargeBlobs: Bool { info.options.isEnabled(.largeBlobs) }

    /// The key's large-blob array, with whether it was corrupted (it then reads as empty).
    public func largeBlobArray(deadline: Deadline) async throws(AuthenticatorError) -> LargeBlobArray.Reading {
        try requireLargeBlobs()
        do throws(CTAP2Error) {
            return try await LargeBlobs(session: session, info: info, logger: logger).readArray(deadline: deadline)
        } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }

    /// The discoverable credentials that have a largeBlobKey, of every relying party or of
    /// `rpID`, read with a cm token.
    public func largeBlobCredentials(
        rpID: String? = nil, interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) -> [LargeBlobCredential] {
        try await withCredentialManagement(rpID: rpID, interaction: interaction, deadline: deadline) {
            (manager) throws(CTAP2Error) in
            try await Self.largeBlobCredentials(manager, rpID: rpID, deadline: deadline)
        }
    }

    /// Runs `body` with a ``LargeBlobs`` holding a fresh lbw token (nil on a key that verifies
    /// nobody) and, when `credentialManagement` is true, a ``CredentialManagement`` sharing that
    /// token (which then also carries `cm`, bound to `rpID` where given); wipes the token after.
    @discardableResult
    public func withLargeBlobs<T: Sendable>(
        credentialManagement: Bool, rpID: String? = nil, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline,
        _ body: @Sendable (LargeBlobs, CredentialManagement?) async throws(CTAP2Error) -> T
    ) async throws(AuthenticatorError) -> T {
        try requireLargeBlobs()
        if credentialManagement && !supportsCredentialManagement {
            throw AuthenticatorError(
                .notSupported,
                "The security key does not support credential management, which gives the credentials' largeBlobKeys.",
                deviceURI: uri)
        }
        var permissions: PINUVAuthTokenPermissions = [.largeBlobWrite]
        if credentialManagement { permissions.insert(.credentialManagement) }
        // One ceremony: the key is held from the token to the last command (Authenticator+Ceremony.swift).
        return try await withCeremony { () throws(AuthenticatorError) -> T in
            let token = try await largeBlobToken(
                permissions: permissions, rpID: rpID, interaction: interaction, deadline: deadline)
            defer { token?.wipe() }
            do throws(CTAP2Error) {
                let blobs = try LargeBlobs(session: session, info: info, token: token, logger: logger)
                var manager: CredentialManagement?
                if credentialManagement, let token {
                    manager = try CredentialManagement(session: session, info: info, token: token, logger: logger)
                }
                return try await body(blobs, manager)
            } catch {
                throw AuthenticatorError(error, deviceURI: uri)
            }
        }
    }

    /// The blob stored for the discoverable credential with this ID: its largeBlobKey is found
    /// through credential management, then the array is read with the same token.
    public func largeBlob(
        credentialID: [UInt8], rpID: String? = nil, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline
    ) async throws(AuthenticatorError) -> (credential: LargeBlobCredential, lookup: LargeBlobs.Lookup) {
        try await withLargeBlobs(
            credentialManagement: true, rpID: rpID, interaction: interaction, deadline: deadline
        ) { (blobs, manager) throws(CTAP2Error) in
            let found = try await Self.findCredential(manager, credentialID, rpID: rpID, deadline: deadline)
            return (found, try await blobs.blob(key: found.largeBlobKey, deadline: deadline))
        }
    }

    /// Stores `data` as the blob of the discoverable credential with this ID, keeping every other
    /// entry; a corrupted array is replaced only with `force`.
    @discardableResult
    public func setLargeBlob(
        _ data: [UInt8], credentialID: [UInt8], rpID: String? = nil, force: Bool = false,
        interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) -> LargeBlobCredential {
        try await withLargeBlobs(
            credentialManagement: true, rpID: rpID, interaction: interaction, deadline: deadline
        ) { (blobs, manager) throws(CTAP2Error) in
            let found = try await Self.findCredential(manager, credentialID, rpID: rpID, deadline: deadline)
            try await blobs.setBlob(data, key: found.largeBlobKey, force: force, deadline: deadline)
            return found
        }
    }

    /// Removes the blob of the discoverable credential with this ID (the entries that decrypt
    /// with its key), keeping the rest; returns how many entries went. A corrupted array is
    /// replaced (by an empty one) only with `force`.
    @discardableResult
    public func deleteLargeBlob(
        credentialID: [UInt8], rpID: String? = nil, force: Bool = false,
        interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) -> Int {
        try await withLargeBlobs(
            credentialManagement: true, rpID: rpID, interaction: interaction, deadline: deadline
        ) { (blobs, manager) throws(CTAP2Error) in
            let found = try await Self.findCredential(manager, credentialID, rpID: rpID, deadline: deadline)
            return try await blobs.deleteBlob(key: found.largeBlobKey, force: force, deadline: deadline)
        }
    }

    // MARK: Internals

    private func requireLargeBlobs() throws(AuthenticatorError) {
        guard supportsLargeBlobs else {
            throw AuthenticatorError(
                .notSupported, "The security key does not offer large-blob storage.", deviceURI: uri)
        }
    }

    /// A token with `permissions`, or nil when only lbw is wanted and the key verifies nobody
    /// (an unprotected key takes large-blob writes without one, CTAP 2.1 §6.10.2).
    func largeBlobToken(
        permissions: PINUVAuthTokenPermissions, rpID: String?, interaction: (any AuthenticatorInteraction)?,
        deadline: Deadline
    ) async throws(AuthenticatorError) -> PINUVAuthToken? {
        if !canVerifyUser && permissions == [.largeBlobWrite] { return nil }
        // A permissions RP ID only means something with getPinUvAuthTokenUsing…WithPermissions.
        let boundRPID = info.options.isEnabled(.pinUVAuthToken) ? rpID : nil
        switch try await verifyUser(
            permissions: permissions, rpID: boundRPID, interaction: interaction, deadline: deadline)
        {
        case .token(let token): return token
        case .uvOption, .none:
            return try await pinToken(
                permissions: permissions, rpID: boundRPID, interaction: interaction, deadline: deadline)
        }
    }

    static func largeBlobCredentials(_ manager: CredentialManagement, rpID: String?, deadline: Deadline)
        async throws(CTAP2Error) -> [LargeBlobCredential]
    {
        var out: [LargeBlobCredential] = []
        if let rpID {
            for credential in try await manager.credentials(rpID: rpID, deadline: deadline)
            where credential.largeBlobKey != nil {
                out.append(LargeBlobCredential(rpID: rpID, credential: credential))
            }
            return out
        }
        for party in try await manager.relyingParties(deadline: deadline) {
            for credential in try await manager.credentials(rpIDHash: party.rpIDHash, deadline: deadline)
            where credential.largeBlobKey != nil {
                out.append(LargeBlobCredential(rpID: party.entity.id, credential: credential))
            }
        }
        return out
    }

    static func findCredential(
        _ manager: CredentialManagement?, _ id: [UInt8], rpID: String?, deadline: Deadline
    ) async throws(CTAP2Error) -> LargeBlobCredential {
        guard let manager else {
            throw CTAP2Error(
                .pinNotSet, "Reading a credential's largeBlobKey needs the key's PIN: set a PIN first.")
        }
        var matching: LargeBlobCredential?
        if let rpID {
            matching = try await manager.credentials(rpID: rpID, deadline: deadline)
                .first { $0.credentialID.id == id }.map { LargeBlobCredential(rpID: rpID, credential: $0) }
        } else {
            outer: for party in try await manager.relyingParties(deadline: deadline) {
                for credential in try await manager.credentials(rpIDHash: party.rpIDHash, deadline: deadline)
                where credential.credentialID.id == id {
                    matching = LargeBlobCredential(rpID: party.entity.id, credential: credential)
                    break outer
                }
            }
        }
        guard let matching else {
            throw CTAP2Error(.noCredentials, "The key holds no discoverable credential with this ID.")
        }
        guard matching.credential.largeBlobKey != nil else {
            throw CTAP2Error(
                .unsupportedExtension,
                "The credential has no largeBlobKey (it was not made with the largeBlobKey extension).")
        }
        return matching
    }
}
