import CBOR
import Crypto

extension CTAPCommand {
    /// authenticatorCredentialManagement (§6.8).
    public static let credentialManagement = CTAPCommand(rawValue: 0x0A)
    /// authenticatorCredentialManagement as FIDO_2_1_PRE keys number it (vendor command 0x41).
    public static let credentialManagementPreview = CTAPCommand(rawValue: 0x41)
}

extension VirtualKey.CommandHandler {
    /// authenticatorCredentialManagement, offered with the `credMgmt` option.
    /// Its token permission, cm, comes with either form of the command.
    static let credentialManagement = VirtualKey.CommandHandler(
        .credentialManagement, name: "credentialManagement", continues: .enumeration,
        isOffered: { $0.options["credMgmt"] == true },
        grants: { configuration, _ in
            guard configuration.supportsCredentialManagement else { return [] }
            return configuration.persistentPINUVAuthToken
                ? [.credentialManagement, .persistentCredentialManagementReadOnly] : .credentialManagement
        }
    ) { (key, parameters, _, _) async throws(VirtualKeyError) -> CBORMap? in
        try key.credentialManagement(parameters, preview: false)
    }
    /// The FIDO_2_1_PRE credential management, offered with the `credentialMgmtPreview` option.
    static let credentialManagementPreview = VirtualKey.CommandHandler(
        .credentialManagementPreview, name: "credentialManagementPreview", continues: .enumeration,
        isOffered: { $0.options["credentialMgmtPreview"] == true }
    ) { (key, parameters, _, _) async throws(VirtualKeyError) -> CBORMap? in
        try key.credentialManagement(parameters, preview: true)
    }
}

extension VirtualKey {
    /// authenticatorCredentialManagement parameters (CTAP 2.1 §6.8).
    enum CredentialManagementParameter {
        static let subCommand = 0x01
        static let subCommandParams = 0x02
        static let pinUvAuthProtocol = 0x03
        static let pinUvAuthParam = 0x04
    }

    /// Members of credential management's subCommandParams (CTAP 2.1 §6.8).
    enum CredentialManagementSubParameter {
        static let rpIDHash = 0x01
        static let credentialID = 0x02
        static let user = 0x03
    }

    /// authenticatorCredentialManagement response members (CTAP 2.1 §6.8 "Response").
    enum CredentialManagementResponseMember {
        static let existingResidentCredentialsCount = 0x01
        static let maxPossibleRemainingResidentCredentialsCount = 0x02
        static let rp = 0x03
        static let rpIDHash = 0x04
        static let totalRPs = 0x05
        static let user = 0x06
        static let credentialID = 0x07
        static let publicKey = 0x08
        static let totalCredentials = 0x09
        static let credProtect = 0x0A
        static let largeBlobKey = 0x0B
        /// CTAP 2.2 §6.8: whether the credential is thirdPartyPayment-enabled.
        static let thirdPartyPayment = 0x0C
    }

    /// authenticatorCredentialManagement subcommands (CTAP 2.1 §6.8).
    struct CredentialManagementSubcommand: RawRepresentable, Hashable, CustomStringConvertible {
        var rawValue: UInt64
        static let getCredsMetadata = Self(rawValue: 0x01)
        static let enumerateRPsBegin = Self(rawValue: 0x02)
        static let enumerateRPsGetNextRP = Self(rawValue: 0x03)
        static let enumerateCredentialsBegin = Self(rawValue: 0x04)
        static let enumerateCredentialsGetNextCredential = Self(rawValue: 0x05)
        static let deleteCredential = Self(rawValue: 0x06)
        static let updateUserInformation = Self(rawValue: 0x07)
        var description: String { "0x" + String(rawValue, radix: 16) }
    }

    /// What the "next" subcommands of credential management continue with (CTAP 2.1 §6.8.3,
    /// §6.8.4); any other command ends it, as for getNextAssertion.
    struct PendingEnumeration {
        enum Remaining {
            case relyingParties([(id: String, name: String?)])
            case credentials([DiscoverableCredential])
        }
        var remaining: Remaining
        var lastUsed: ContinuousClock.Instant
    }

    /// Discoverable credentials that still fit (getInfo remainingDiscoverableCredentials).
    var remainingDiscoverableCredentials: Int {
        max(configuration.maxDiscoverableCredentials - state.credentials.count, 0)
    }

    /// authenticatorCredentialManagement (CTAP 2.1 §6.8), or its FIDO_2_1_PRE form
    /// (`preview`: command 0x41, tokens without permissions, no updateUserInformation).
    func credentialManagement(_ raw: ArraySlice<UInt8>, preview: Bool) throws(VirtualKeyError) -> CBORMap? {
        typealias P = CredentialManagementParameter
        typealias Sub = CredentialManagementSubcommand
        let p = try CTAPParameters(request: raw, context: "credentialManagement")
        guard let rawSub = try p.unsigned(P.subCommand) else {
            throw .rejected(.missingParameter, "credentialManagement lacks its subCommand.")
        }
        let sub = Sub(rawValue: rawSub)
        let params = try p.nested(P.subCommandParams, "subCommandParams")
        let pinUvAuthProtocol = try p.unsigned(P.pinUvAuthProtocol)
        let pinUvAuthParam = try p.bytes(P.pinUvAuthParam)
        let next = sub == .enumerateRPsGetNextRP || sub == .enumerateCredentialsGetNextCredential
        if !next { pendingEnumeration = nil }

        /// Verifies the pinUvAuthParam over subCommand ‖ subCommandParams (§6.8 step "pinUvAuthParam")
        /// and returns the token's permissions RP ID, if it has one.
        func authenticate() throws(VirtualKeyError) -> String? {
            guard let pinUvAuthParam else {
                throw .rejected(.puatRequired, "credentialManagement \(sub) needs a pinUvAuthParam.")
            }
            guard pinUvAuthProtocol != nil else {
                throw .rejected(.missingParameter, "pinUvAuthParam came without pinUvAuthProtocol.")
            }
            guard rawSub <= UInt64(UInt8.max) else {
                throw .rejected(.invalidSubcommand, "credentialManagement subcommand \(sub) is not known.")
            }
            var message: [UInt8] = [UInt8(rawSub)]
            if let params { message += CBOREncoder.encode(.map(params.map)) }
            // The persistent token (pcmr, CTAP 2.2) reads and never changes anything.
            if !preview,
                try verifiesWithPersistentToken(pinUvAuthParam, protocol: pinUvAuthProtocol, message: message)
            {
                guard sub == .getCredsMetadata || sub == .enumerateRPsBegin || sub == .enumerateCredentialsBegin
                else {
                    throw .rejected(.pinAuthInvalid, "The persistent pinUvAuthToken only reads credentials.")
                }
                return nil
            }
            // FIDO_2_1_PRE had no permissions: any token of this power-up will do.
            try verifyPinUvAuthParam(
                pinUvAuthParam, protocol: pinUvAuthProtocol, message: message,
                permission: preview ? [] : .credentialManagement, rpID: nil, bindsRP: false)
            return clientPINSession.tokenState.rpID
        }

        switch sub {
        case .getCredsMetadata:
            try requireNoRPBinding(try authenticate())
            return [
                .int(CredentialManagementResponseMember.existingResidentCredentialsCount): .int(
                    state.credentials.count),
                .int(CredentialManagementResponseMember.maxPossibleRemainingResidentCredentialsCount): .int(
                    remainingDiscoverableCredentials),
            ]
        case .enumerateRPsBegin:
            try requireNoRPBinding(try authenticate())
            return try beginRPEnumeration()
        case .enumerateRPsGetNextRP:
            return try nextRelyingParty()
        case .enumerateCredentialsBegin:
            let bound = try authenticate()
            guard let rpIDHash = try params?.bytes(CredentialManagementSubParameter.rpIDHash) else {
                throw .rejected(.missingParameter, "enumerateCredentialsBegin lacks rpIDHash.")
            }
            if let bound, Self.rpIDHash(bound) != rpIDHash {
                throw .rejected(.pinAuthInvalid, "The pinUvAuthToken is bound to another relying party.")
            }
            return try beginCredentialEnumeration(rpIDHash: rpIDHash)
        case .enumerateCredentialsGetNextCredential:
            return try nextCredential()
        case .deleteCredential:
            let bound = try authenticate()
            let index = try storedCredentialIndex(params, bound: bound)
            state.storedCredentialKeys[state.credentials[index].seed] = nil
            state.credentials.remove(at: index)
            try persist()
            logger.debug("Discoverable credential deleted")
            return nil
        case .updateUserInformation where !preview:
            let bound = try authenticate()
            let index = try storedCredentialIndex(params, bound: bound)
            guard let user = try params?.nested(CredentialManagementSubParameter.user, "user") else {
                throw .rejected(.missingParameter, "updateUserInformation lacks user.")
            }
            guard let userID = try user.bytes("id") else {
                throw .rejected(.missingParameter, "user lacks its id.")
            }
            guard userID == state.credentials[index].userID else {
                throw .rejected(.invalidParameter, "updateUserInformation cannot change the user ID.")
            }
            // Absent or empty fields are removed from the stored user (§6.8.6 step 5).
            let name = try user.text("name")
            let displayName = try user.text("displayName")
            state.credentials[index].userName = name.flatMap { $0.isEmpty ? nil : $0 }
            state.credentials[index].userDisplayName = displayName.flatMap { $0.isEmpty ? nil : $0 }
            try persist()
            logger.debug("Discoverable credential's user updated")
            return nil
        default:
            throw .rejected(.invalidSubcommand, "credentialManagement subcommand \(sub) is not known.")
        }
    }

    /// getCredsMetadata and enumerateRPsBegin act on all RPs: a token bound to one is refused.
    private func requireNoRPBinding(_ bound: String?) throws(VirtualKeyError) {
        if bound != nil {
            throw .rejected(.pinAuthInvalid, "The pinUvAuthToken is bound to one relying party.")
        }
    }

    static func rpIDHash(_ rpID: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(rpID.utf8)))
    }

    /// enumerateRPsBegin (§6.8.3): the first RP, the RP count, and the rest for "next".
    private func beginRPEnumeration() throws(VirtualKeyError) -> CBORMap {
        var rps: [(id: String, name: String?)] = []
        for credential in state.credentials where !rps.contains(where: { $0.id == credential.rpID }) {
            rps.append((credential.rpID, credential.rpName))
        }
        guard let first = rps.first else {
            throw .rejected(.noCredentials, "No discoverable credentials are stored.")
        }
        var response = relyingPartyResponse(first)
        response[CredentialManagementResponseMember.totalRPs] = .int(rps.count)
        if rps.count > 1 {
            pendingEnumeration = PendingEnumeration(
                remaining: .relyingParties(Array(rps.dropFirst())), lastUsed: now)
        }
        return response
    }

    private func relyingPartyResponse(_ rp: (id: String, name: String?)) -> CBORMap {
        var entity: CBORMap = ["id": .textString(rp.id)]
        if let name = rp.name { entity["name"] = .textString(name) }
        return [
            .int(CredentialManagementResponseMember.rp): .map(entity),
            .int(CredentialManagementResponseMember.rpIDHash): .byteString(Self.rpIDHash(rp.id)),
        ]
    }

    /// enumerateRPsGetNextRP (§6.8.3).
    private func nextRelyingParty() throws(VirtualKeyError) -> CBORMap {
        guard var pending = try pendingWithinWindow(),
            case .relyingParties(var rps) = pending.remaining, !rps.isEmpty
        else { throw .rejected(.notAllowed, "There is no RP enumeration to continue.") }
        let rp = rps.removeFirst()
        pending.remaining = .relyingParties(rps)
        pending.lastUsed = now
        pendingEnumeration = rps.isEmpty ? nil : pending
        return relyingPartyResponse(rp)
    }

    /// enumerateCredentialsBegin (§6.8.4): the first credential of the RP, the count, and the
    /// rest for "next".
    private func beginCredentialEnumeration(rpIDHash: [UInt8]) throws(VirtualKeyError) -> CBORMap {
        let credentials = state.credentials.filter { Self.rpIDHash($0.rpID) == rpIDHash }
        guard let first = credentials.first else {
            throw .rejected(.noCredentials, "No discoverable credentials are stored for this RP.")
        }
        var response = try credentialResponse(first)
        response[CredentialManagementResponseMember.totalCredentials] = .int(credentials.count)
        if credentials.count > 1 {
            pendingEnumeration = PendingEnumeration(
                remaining: .credentials(Array(credentials.dropFirst())), lastUsed: now)
        }
        return response
    }

    /// enumerateCredentialsGetNextCredential (§6.8.4).
    private func nextCredential() throws(VirtualKeyError) -> CBORMap {
        guard var pending = try pendingWithinWindow(),
            case .credentials(var credentials) = pending.remaining, !credentials.isEmpty
        else { throw .rejected(.notAllowed, "There is no credential enumeration to continue.") }
        let credential = credentials.removeFirst()
        pending.remaining = .credentials(credentials)
        pending.lastUsed = now
        pendingEnumeration = credentials.isEmpty ? nil : pending
        return try credentialResponse(credential)
    }

    /// The pending enumeration, or nil (and forgotten) once its window has closed.
    private func pendingWithinWindow() throws(VirtualKeyError) -> PendingEnumeration? {
        guard let pending = pendingEnumeration else { return nil }
        guard now - pending.lastUsed < configuration.credentialManagementEnumerationWindow else {
            pendingEnumeration = nil
            throw .rejected(.notAllowed, "The credential enumeration window has closed.")
        }
        return pending
    }

    /// user, credentialID, publicKey, credProtect and (CTAP 2.2) thirdPartyPayment of one stored
    /// credential (§6.8.4).
    private func credentialResponse(_ credential: DiscoverableCredential) throws(VirtualKeyError) -> CBORMap {
        guard let key = credentialKey(credential.algorithm, seed: credential.seed) else {
            throw .rejected(.other, "A stored credential's key cannot be rebuilt.")
        }
        var user: CBORMap = ["id": .byteString(credential.userID)]
        if let name = credential.userName { user["name"] = .textString(name) }
        if let displayName = credential.userDisplayName { user["displayName"] = .textString(displayName) }
        var response: CBORMap = [
            .int(CredentialManagementResponseMember.user): .map(user),
            .int(CredentialManagementResponseMember.credentialID): .map([
                "id": .byteString(credential.id), "type": "public-key",
            ]),
            .int(CredentialManagementResponseMember.publicKey): .map(key.cosePublicKey),
            .int(CredentialManagementResponseMember.credProtect): .int(Int(credential.credProtect.rawValue)),
        ]
        if let key = state.largeBlobKeys[credential.id] {
            response[.int(CredentialManagementResponseMember.largeBlobKey)] = .byteString(key)
        }
        if configuration.effectiveExtensions.contains(ExtensionIdentifier.thirdPartyPayment) {
            response[.int(CredentialManagementResponseMember.thirdPartyPayment)] = .boolean(
                credential.thirdPartyPayment)
        }
        return response
    }

    /// The stored credential that subCommandParams' credentialId names; NO_CREDENTIALS when
    /// none, PIN_AUTH_INVALID when the token is bound to another RP (§6.8.5, §6.8.6).
    private func storedCredentialIndex(
        _ params: CTAPParameters?, bound: String?
    ) throws(VirtualKeyError) -> Int {
        guard
            let descriptor = try params?.nested(CredentialManagementSubParameter.credentialID, "credentialId")
        else { throw .rejected(.missingParameter, "The request lacks credentialId.") }
        guard let id = try descriptor.bytes("id") else {
            throw .rejected(.missingParameter, "credentialId lacks its id.")
        }
        guard let index = state.credentials.firstIndex(where: { $0.id == id }) else {
            throw .rejected(.noCredentials, "No discoverable credential has this ID.")
        }
        if let bound, bound != state.credentials[index].rpID {
            throw .rejected(.pinAuthInvalid, "The pinUvAuthToken is bound to another relying party.")
        }
        return index
    }
}
