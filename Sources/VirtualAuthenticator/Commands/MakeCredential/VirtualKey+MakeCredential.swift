import CBOR
import Crypto
import Transport

extension CTAPCommand {
    /// authenticatorMakeCredential (§6.1).
    public static let makeCredential = CTAPCommand(rawValue: 0x01)
}

extension VirtualKey.CommandHandler {
    /// authenticatorMakeCredential, offered by every CTAP2 key.
    static let makeCredential = VirtualKey.CommandHandler(
        .makeCredential, name: "makeCredential",
        grants: { $0.grantsMakeCredentialAndGetAssertion(usingUV: $1) ? .makeCredential : [] }
    ) { (key, parameters, _, keepalive) async throws(VirtualKeyError) -> CBORMap? in
        try await key.makeCredential(parameters, keepalive: keepalive)
    }
}

extension VirtualKey {
    /// authenticatorMakeCredential parameters (CTAP 2.1 §6.1).
    enum MakeCredentialParameter {
        static let clientDataHash = 0x01
        static let rp = 0x02
        static let user = 0x03
        static let pubKeyCredParams = 0x04
        static let excludeList = 0x05
        static let extensions = 0x06
        static let options = 0x07
        static let pinUvAuthParam = 0x08
        static let pinUvAuthProtocol = 0x09
        static let enterpriseAttestation = 0x0A
        /// attestationFormatsPreference (CTAP 2.2 §6.1).
        static let attestationFormatsPreference = 0x0B
    }

    /// authenticatorMakeCredential response members (CTAP 2.1 §6.1 "Response").
    enum MakeCredentialResponseMember {
        static let fmt = 0x01
        static let authData = 0x02
        static let attStmt = 0x03
        static let epAtt = 0x04
    }

    /// makeCredential's enterpriseAttestation values (CTAP 2.1 §7.1).
    enum EnterpriseAttestationKind {
        /// Vendor-facilitated: only RPs on the key's own list get an enterprise attestation.
        static let vendorFacilitated: UInt64 = 1
        /// Platform-managed: the platform decided; every RP gets one.
        static let platformManaged: UInt64 = 2
    }

    /// The longest user handle WebAuthn allows (§5.4.3 "user.id").
    static let maxUserIDLength = 64
    /// The clientDataHash length (SHA-256).
    static let clientDataHashLength = 32

    /// authenticatorMakeCredential (CTAP 2.1 §6.1.2).
    func makeCredential(
        _ raw: ArraySlice<UInt8>, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) -> CBORMap {
        typealias P = MakeCredentialParameter
        let p = try CTAPParameters(request: raw, context: "makeCredential")
        guard
            let clientDataHash = try p.bytes(P.clientDataHash, required: true),
            let rp = try p.nested(P.rp, "rp", required: true),
            let user = try p.nested(P.user, "user", required: true),
            let credParams = try p.array(P.pubKeyCredParams, required: true)
        else { throw .rejected(.missingParameter, "makeCredential lacks a required parameter.") }
        let excludeItems = try p.array(P.excludeList)
        let extensions = try p.nested(P.extensions, "extensions")
        let options = try p.nested(P.options, "options")
        let pinUvAuthParam = try p.bytes(P.pinUvAuthParam)
        let pinUvAuthProtocol = try p.unsigned(P.pinUvAuthProtocol)
        let enterpriseAttestation = try p.unsigned(P.enterpriseAttestation)
        let preferredFormat =
            configuration.isCTAP22 ? try chooseAttestationFormat(p.array(P.attestationFormatsPreference)) : nil

        guard clientDataHash.count == Self.clientDataHashLength else {
            throw .rejected(.invalidLength, "clientDataHash is \(clientDataHash.count) bytes, not 32.")
        }
        guard let rpID = try rp.text("id") else {
            throw .rejected(.missingParameter, "rp lacks its id.")
        }
        let rpName = try rp.text("name")
        guard let userID = try user.bytes("id") else {
            throw .rejected(.missingParameter, "user lacks its id.")
        }
        guard userID.count <= Self.maxUserIDLength else {
            throw .rejected(.invalidLength, "user.id is \(userID.count) bytes; at most 64 are allowed.")
        }
        let userName = try user.text("name")
        let userDisplayName = try user.text("displayName")

        try await checkPINProbeAndProtocol(pinUvAuthParam, protocol: pinUvAuthProtocol, keepalive: keepalive)
        let algorithm = try chooseAlgorithm(credParams)

        let rk = try options?.bool("rk") ?? false
        if try options?.bool("up") == false {
            throw .rejected(.invalidOption, "makeCredential cannot be done without user presence.")
        }
        // pinUvAuthParam takes precedence over the deprecated "uv" option (§6.1.2 step 5).
        var uvOption = try options?.bool("uv") ?? false
        // alwaysUv: without a pinUvAuthParam, built-in UV is used when there is one, and a
        // pinUvAuthParam is required otherwise (§6.1.2 step 6).
        if alwaysUVEnabled && pinUvAuthParam == nil && hasBuiltInUserVerification {
            uvOption = true
        }
        let uv = pinUvAuthParam == nil && uvOption
        if uv && !hasBuiltInUserVerification {
            throw .rejected(.invalidOption, "This key has no built-in user verification.")
        }
        if rk && !configuration.supportsDiscoverableCredentials {
            throw .rejected(.unsupportedOption, "This key does not store discoverable credentials.")
        }
        let enterprise = try enterpriseAttestationApplies(enterpriseAttestation, rpID: rpID)
        // makeCredUvNotRqd lets a protected key make non-discoverable credentials without
        // verification; otherwise every credential needs it (§6.1.2 steps 7–8).
        let verification = try await establishVerification(
            param: pinUvAuthParam, protocol: pinUvAuthProtocol, uvOption: uv, clientDataHash: clientDataHash,
            permission: .makeCredential, rpID: rpID,
            puatRequired: alwaysUVEnabled
                || (isProtectedByUserVerification && (!makeCredentialUVNotRequiredNow || rk)),
            keepalive: keepalive)

        let rpIDHash = Array(SHA256.hash(data: Array(rpID.utf8)))
        if let excludeItems {
            let excluded = try CredentialDescriptor.list(
                excludeItems, context: "excludeList", maxCount: configuration.maxCredentialCountInList,
                maxIDLength: configuration.maxCredentialIdLength)
            for descriptor in excluded where descriptor.type == "public-key" {
                if let found = resolve(descriptor.id, rpID: rpID, rpIDHash: rpIDHash),
                    excludes(found, userVerified: verification.userVerified)
                {
                    // The spec asks for presence first so a page cannot probe silently (§6.1.2 step 12).
                    if !verification.userPresent { try await collectUserPresence(keepalive: keepalive) }
                    throw .rejected(.credentialExcluded, "A credential in excludeList is on this key.")
                }
            }
        }
        // Unknown extensions are ignored (§6.1.2 step 10).
        let extensionRequest = try makeCredentialExtensionRequest(extensions)
        let wantsLargeBlobKey = try largeBlobKeyRequested(extensions, makeCredentialRK: rk)
        var extensionOutputs = CBORMap()
        if supportedExtensions.contains(Self.minPinLengthExtension),
            try extensions?.bool(Self.minPinLengthExtension) == true,
            state.minPINLengthRPIDs.contains(rpID)
        {
            // Only RPs named by setMinPINLength learn the minimum (CTAP 2.1 §12.4).
            extensionOutputs[.textString(Self.minPinLengthExtension)] = .int(currentMinPINLength)
        }

        // Presence shown by built-in UV or cached in the token counts; either way the token's
        // cached presence and verification are used up (§6.1.2 steps 13–14).
        if !verification.userPresent { try await collectUserPresence(keepalive: keepalive) }
        clientPINSession.tokenState.consume()

        guard let generated = CredentialPrivateKey.generate(algorithm: algorithm) else {
            throw .rejected(.other, "A key for \(algorithm) could not be made.")
        }
        let (seed, key) = generated
        if let stored = key.storedRepresentation {
            guard state.storedCredentialKeys.count < VirtualKeyState.maxStoredCredentialKeys else {
                throw .rejected(.keyStoreFull, "No room for another \(algorithm) credential key.")
            }
            state.storedCredentialKeys[seed] = stored
        }
        let credentialID = try CredentialID.seal(
            algorithm: algorithm, seed: seed, rpIDHash: rpIDHash, wrappingKey: wrappingKey,
            flags: extensionRequest.idFlags)
        let extensionState = newCredentialExtensionState(
            extensionRequest, credentialID: credentialID, discoverable: rk)
        try addMakeCredentialExtensionOutputs(
            extensionRequest, state: extensionState, userVerified: verification.userVerified,
            to: &extensionOutputs)
        if rk {
            let replacing = state.credentials.contains { $0.rpID == rpID && $0.userID == userID }
            if !replacing && state.credentials.count >= configuration.maxDiscoverableCredentials {
                throw .rejected(.keyStoreFull, "No room for another discoverable credential.")
            }
            for replaced in state.credentials where replaced.rpID == rpID && replaced.userID == userID {
                state.storedCredentialKeys[replaced.seed] = nil
            }
            state.credentials.removeAll { $0.rpID == rpID && $0.userID == userID }
            state.credentials.append(
                DiscoverableCredential(
                    id: credentialID, rpID: rpID, rpName: rpName, userID: userID, userName: userName,
                    userDisplayName: userDisplayName, algorithm: algorithm, seed: seed, signatureCounter: 0,
                    sequence: state.nextSequence, credProtect: extensionState.credProtect,
                    credRandoms: extensionState.credRandoms, credBlob: extensionState.credBlob,
                    thirdPartyPayment: extensionState.thirdPartyPayment))
            state.nextSequence += 1
        }
        let largeBlobKey = rk && wantsLargeBlobKey ? makeLargeBlobKey(credentialID: credentialID) : nil
        let signCount: UInt32 =
            configuration.signatureCounter == .global ? nextSignatureCount(credentialID: credentialID) : 0
        var flags: AuthenticatorData.Flags = .userPresent
        if verification.userVerified { flags.insert(.userVerified) }
        let authData = AuthenticatorData(
            rpIDHash: rpIDHash, flags: flags, signCount: signCount,
            attestedCredential: (aaguid, credentialID, key.cosePublicKey), extensions: extensionOutputs
        ).bytes
        let (format, statement) =
            enterprise
            ? try enterpriseAttest(authData: authData, clientDataHash: clientDataHash)
            : try attest(authData: authData, clientDataHash: clientDataHash, key: key, format: preferredFormat)
        try persist()

        var response = CBORMap()
        response[MakeCredentialResponseMember.fmt] = .textString(format)
        response[MakeCredentialResponseMember.authData] = .byteString(authData)
        response[MakeCredentialResponseMember.attStmt] = .map(statement)
        if enterprise { response[MakeCredentialResponseMember.epAtt] = true }
        if let largeBlobKey { response[.int(Self.makeCredentialLargeBlobKeyMember)] = .byteString(largeBlobKey) }
        return response
    }

    /// Whether this makeCredential gets an enterprise attestation (CTAP 2.1 §6.1.2 step 9, §7.1):
    /// INVALID_PARAMETER when the key is not capable or enterprise attestation is disabled,
    /// INVALID_OPTION for a value other than 1 or 2; a vendor-facilitated request for an RP
    /// not on the key's list gets the ordinary attestation.
    func enterpriseAttestationApplies(_ value: UInt64?, rpID: String) throws(VirtualKeyError) -> Bool {
        guard let value else { return false }
        guard enterpriseAttestationEnabled else {
            throw .rejected(.invalidParameter, "Enterprise attestation is not enabled on this key.")
        }
        switch value {
        case EnterpriseAttestationKind.vendorFacilitated:
            return configuration.enterpriseAttestationRPIDs.contains(rpID)
        case EnterpriseAttestationKind.platformManaged:
            return true
        default:
            throw .rejected(.invalidOption, "enterpriseAttestation must be 1 or 2, not \(value).")
        }
    }

    /// A packed attestation signed by the enterprise attestation key, with its certificate.
    func enterpriseAttest(authData: [UInt8], clientDataHash: [UInt8]) throws(VirtualKeyError) -> (
        String, CBORMap
    ) {
        guard let enterpriseAttestationKey, let certificate = enterpriseAttestationCertificateDER else {
            throw .rejected(.invalidParameter, "This key has no enterprise attestation identity.")
        }
        let signature: [UInt8]
        do {
            signature = Array(
                try enterpriseAttestationKey.signature(for: authData + clientDataHash).derRepresentation)
        } catch {
            throw VirtualKeyError(
                .crypto, "Signing with the enterprise attestation key failed.", underlying: error)
        }
        return (
            "packed",
            [
                "alg": .int(COSEAlgorithm.es256.rawValue), "sig": .byteString(signature),
                "x5c": [.byteString(certificate)],
            ]
        )
    }

    /// The first supported algorithm of pubKeyCredParams; other types are skipped (§6.1.2 step 3).
    func chooseAlgorithm(_ items: [CBORValue]) throws(VirtualKeyError) -> COSEAlgorithm {
        var chosen: COSEAlgorithm?
        for item in items {
            guard let m = item.mapValue else {
                throw .rejected(.cborUnexpectedType, "An entry of pubKeyCredParams is not a map.")
            }
            let entry = CTAPParameters(m, context: "pubKeyCredParams")
            guard let type = try entry.text("type", required: true),
                let alg = try entry.integer("alg", required: true)
            else { throw .rejected(.missingParameter, "A pubKeyCredParams entry lacks type or alg.") }
            let algorithm = COSEAlgorithm(rawValue: alg)
            if chosen == nil, type == "public-key", configuration.algorithms.contains(algorithm) {
                chosen = algorithm
            }
        }
        guard let chosen else {
            throw .rejected(.unsupportedAlgorithm, "None of the requested algorithms is supported.")
        }
        return chosen
    }

    /// The attestation statement in the configured format (WebAuthn §8.2, §8.7), or "none"
    /// when the platform prefers it (`format`, from attestationFormatsPreference).
    func attest(
        authData: [UInt8], clientDataHash: [UInt8], key: CredentialPrivateKey, format: String? = nil
    ) throws(VirtualKeyError) -> (String, CBORMap) {
        let signed = authData + clientDataHash
        switch format == "none" ? .none : configuration.attestation {
        case .none:
            return ("none", CBORMap())
        case .selfAttestation:
            return (
                "packed", ["alg": .int(key.algorithm.rawValue), "sig": .byteString(try key.sign(signed))]
            )
        case .packed:
            let signature: [UInt8]
            do {
                signature = Array(try attestationKey.signature(for: signed).derRepresentation)
            } catch {
                throw VirtualKeyError(.crypto, "Signing with the attestation key failed.", underlying: error)
            }
            return (
                "packed",
                [
                    "alg": .int(COSEAlgorithm.es256.rawValue), "sig": .byteString(signature),
                    "x5c": .array(attestationCertificateChainDER.map { .byteString($0) }),
                ]
            )
        }
    }

    /// The credential behind `id` for this relying party, or nil when the ID is not this key's.
    func resolve(_ id: [UInt8], rpID: String, rpIDHash: [UInt8]) -> ResolvedCredential? {
        guard let opened = CredentialID.open(id, rpIDHash: rpIDHash, wrappingKey: wrappingKey),
            let key = credentialKey(opened.algorithm, seed: opened.seed)
        else { return nil }
        let stored = state.credentials.first { $0.id == id && $0.rpID == rpID }
        return ResolvedCredential(id: id, key: key, discoverable: stored, sealedFlags: opened.flags)
    }
}

extension VirtualKey {
    /// The private key of a credential this key made: derived from its seed, or the stored RSA key.
    func credentialKey(_ algorithm: COSEAlgorithm, seed: [UInt8]) -> CredentialPrivateKey? {
        CredentialPrivateKey(algorithm: algorithm, seed: seed, stored: state.storedCredentialKeys[seed])
    }
}

/// A credential found for a request: its ID, key and, if discoverable, what was stored with it.
struct ResolvedCredential {
    let id: [UInt8]
    let key: CredentialPrivateKey
    let discoverable: DiscoverableCredential?
    /// The extension flags sealed in a non-discoverable credential's ID.
    var sealedFlags = CredentialID.Flags(rawValue: 0)
}
