import CBOR
import Crypto
import Logging
import Transport

/// The platform side of authenticatorCredentialManagement (CTAP 2.1 §6.8): the discoverable
/// credentials on a key, listed, deleted and renamed with one pinUvAuthToken carrying the cm
/// permission.
///
/// Keys that list only `credentialMgmtPreview` (FIDO_2_1_PRE) get the preview command 0x41;
/// its subcommands are the same except updateUserInformation, which it lacks.
///
/// Enumerations are bounded: a key's totals are checked against ``limit`` before the first
/// "next" request, so a key that claims 2^32 relying parties ends the call with a
/// malformed-response error instead of looping. The token stays the caller's: this type never
/// wipes it, and never logs it.
public struct CredentialManagement: Sendable {
    /// How many discoverable credentials there are and how many more fit.
    public struct Metadata: Hashable, Sendable {
        /// Discoverable credentials on the key.
        public var existingCount: UInt64
        /// The most that can still be added (fewer when keys are large).
        public var maxRemaining: UInt64
    }

    /// A relying party that has discoverable credentials on the key.
    public struct RelyingParty: Hashable, Sendable {
        /// Its entity as stored (the ID, and the name where the key keeps one).
        public var entity: RelyingPartyEntity
        /// SHA-256 of the RP ID, as the key reports it.
        public var rpIDHash: [UInt8]
    }

    /// One discoverable credential.
    public struct Credential: Hashable, Sendable {
        /// The user account it belongs to.
        public var user: UserEntity
        /// The credential, as a descriptor for deleteCredential and allow lists.
        public var credentialID: PublicKeyCredentialDescriptor
        /// Its public key.
        public var publicKey: COSEKey
        /// Its credProtect level (1–3), where the key reports one.
        public var credProtect: UInt64?
        /// Its largeBlobKey, where it has one.
        public var largeBlobKey: [UInt8]?
        /// Whether it may be used for third-party payment (CTAP 2.2), where reported.
        public var thirdPartyPayment: Bool?
    }

    /// The session commands go through.
    public let session: CTAP2Session
    /// The getInfo response the command choice is based on.
    public let info: AuthenticatorInfo
    /// The token with the cm permission that authenticates the subcommands.
    public let token: PINUVAuthToken
    /// The command byte used: 0x0A, or 0x41 for the preview.
    public let command: CTAP2Command
    /// The most relying parties, or credentials of one relying party, an enumeration accepts.
    public let limit: Int
    private let logger: Logger

    /// The default of ``limit``: far above what shipped keys hold (a few hundred at most).
    public static let defaultLimit = 1000

    /// Uses `token` with the key described by `info`; fails when the key offers no credential
    /// management.
    public init(
        session: CTAP2Session, info: AuthenticatorInfo, token: PINUVAuthToken, limit: Int = defaultLimit,
        logger: Logger = Logger(label: "securitykey.ctap2.credman")
    ) throws(CTAP2Error) {
        guard let command = CredentialManagementRequest.command(for: info) else {
            throw CTAP2Error(.unsupportedOption, "The key does not offer credential management.")
        }
        self.session = session
        self.info = info
        self.token = token
        self.command = command
        self.limit = max(1, limit)
        self.logger = logger
    }

    /// Whether updateUserInformation is available (the full command, not the preview).
    public var canUpdateUserInformation: Bool { command == .credentialManagement }

    // MARK: Reading

    /// getCredsMetadata.
    public func metadata(deadline: Deadline? = nil) async throws(CTAP2Error) -> Metadata {
        let response = try await send(.getCredsMetadata(token: token, command: command), deadline)
        guard let existing = response.existingResidentCredentialsCount,
            let remaining = response.maxPossibleRemainingResidentCredentialsCount
        else {
            throw CTAP2Error.malformed("The getCredsMetadata response lacks its counts.")
        }
        return Metadata(existingCount: existing, maxRemaining: remaining)
    }

    /// Every relying party with discoverable credentials: enumerateRPsBegin, then
    /// enumerateRPsGetNextRP until totalRPs are read. A key with none gives an empty list.
    public func relyingParties(deadline: Deadline? = nil) async throws(CTAP2Error) -> [RelyingParty] {
        let first: CredentialManagementResponse
        do throws(CTAP2Error) {
            first = try await send(.enumerateRPsBegin(token: token, command: command), deadline)
        } catch  where error.code == .noCredentials {
            return []
        }
        guard let total = first.totalRPs else {
            throw CTAP2Error.malformed("The enumerateRPsBegin response lacks totalRPs.")
        }
        if total == 0 { return [] }
        let count = try bounded(total, "relying parties")
        var out: [RelyingParty] = []
        out.reserveCapacity(count)
        out.append(try relyingParty(first))
        for _ in 1..<count {
            out.append(try relyingParty(try await send(.enumerateRPsGetNextRP(command: command), deadline)))
        }
        return out
    }

    /// Every discoverable credential of the relying party whose RP ID hashes to `rpIDHash`:
    /// enumerateCredentialsBegin, then enumerateCredentialsGetNextCredential. A relying party
    /// without credentials gives an empty list.
    public func credentials(rpIDHash: [UInt8], deadline: Deadline? = nil) async throws(CTAP2Error)
        -> [Credential]
    {
        let first: CredentialManagementResponse
        do throws(CTAP2Error) {
            first = try await send(
                .enumerateCredentialsBegin(rpIDHash: rpIDHash, token: token, command: command), deadline)
        } catch  where error.code == .noCredentials {
            return []
        }
        // Some keys leave totalCredentials out when there is one; python-fido2 reads it as 1.
        let total = first.totalCredentials ?? 1
        if total == 0 { return [] }
        let count = try bounded(total, "credentials")
        var out: [Credential] = []
        out.reserveCapacity(count)
        out.append(try credential(first))
        for _ in 1..<count {
            out.append(
                try credential(
                    try await send(.enumerateCredentialsGetNextCredential(command: command), deadline)))
        }
        return out
    }

    /// The discoverable credentials of the relying party `rpID`.
    public func credentials(rpID: String, deadline: Deadline? = nil) async throws(CTAP2Error) -> [Credential]
    {
        try await credentials(rpIDHash: Array(SHA256.hash(data: Array(rpID.utf8))), deadline: deadline)
    }

    // MARK: Changing

    /// deleteCredential: removes the discoverable credential with this ID.
    public func deleteCredential(id: [UInt8], deadline: Deadline? = nil) async throws(CTAP2Error) {
        _ = try await send(
            .deleteCredential(PublicKeyCredentialDescriptor(id: id), token: token, command: command), deadline
        )
        logger.debug("credential deleted")
    }

    /// updateUserInformation: stores `user`'s name and display name with the credential with
    /// this ID; `user.id` must be the credential's user handle.
    public func updateUserInformation(credentialID: [UInt8], user: UserEntity, deadline: Deadline? = nil)
        async throws(CTAP2Error)
    {
        _ = try await send(
            .updateUserInformation(
                PublicKeyCredentialDescriptor(id: credentialID), user: user, token: token, command: command),
            deadline)
        logger.debug("user information updated")
    }

    // MARK: Internals

    private func bounded(_ total: UInt64, _ what: String) throws(CTAP2Error) -> Int {
        guard total <= UInt64(limit) else {
            throw CTAP2Error.malformed(
                "The key claims \(total) \(what), more than the \(limit) this library reads; it is not listed."
            )
        }
        return Int(total)
    }

    private func relyingParty(_ response: CredentialManagementResponse) throws(CTAP2Error) -> RelyingParty {
        guard let entity = response.rp, let hash = response.rpIDHash else {
            throw CTAP2Error.malformed("A relying party in the enumeration lacks its rp or rpIDHash.")
        }
        return RelyingParty(entity: entity, rpIDHash: hash)
    }

    private func credential(_ response: CredentialManagementResponse) throws(CTAP2Error) -> Credential {
        guard let user = response.user, let id = response.credentialID, let key = response.publicKey else {
            throw CTAP2Error.malformed(
                "A credential in the enumeration lacks its user, credentialID or publicKey.")
        }
        return Credential(
            user: user, credentialID: id, publicKey: key, credProtect: response.credProtect,
            largeBlobKey: response.largeBlobKey, thirdPartyPayment: response.thirdPartyPayment)
    }

    private func send(_ request: CredentialManagementRequest, _ deadline: Deadline?) async throws(CTAP2Error)
        -> CredentialManagementResponse
    {
        logger.debug("credentialManagement", metadata: ["subCommand": "\(request.subCommand)"])
        do throws(CTAP2Error) {
            return try await session.send(request, deadline: deadline)
        } catch {
            logger.debug(
                "credentialManagement failed",
                metadata: ["subCommand": "\(request.subCommand)", "code": "\(error.code)"])
            throw error
        }
    }
}
