import CBOR
import Crypto
import Transport

extension CTAPCommand {
    /// authenticatorGetAssertion (§6.2).
    public static let getAssertion = CTAPCommand(rawValue: 0x02)
    /// authenticatorGetNextAssertion (§6.3).
    public static let getNextAssertion = CTAPCommand(rawValue: 0x08)
}

extension VirtualKey.CommandHandler {
    /// authenticatorGetAssertion, offered by every CTAP2 key.
    static let getAssertion = VirtualKey.CommandHandler(
        .getAssertion, name: "getAssertion",
        grants: { $0.grantsMakeCredentialAndGetAssertion(usingUV: $1) ? .getAssertion : [] }
    ) { (key, parameters, _, keepalive) async throws(VirtualKeyError) -> CBORMap? in
        try await key.getAssertion(parameters, keepalive: keepalive)
    }
    /// authenticatorGetNextAssertion: continues the assertions getAssertion left.
    static let getNextAssertion = VirtualKey.CommandHandler(
        .getNextAssertion, name: "getNextAssertion", continues: .assertions
    ) { (key, _, _, _) async throws(VirtualKeyError) -> CBORMap? in
        try key.getNextAssertion()
    }
}

extension VirtualKey {
    /// authenticatorGetAssertion parameters (CTAP 2.1 §6.2).
    enum GetAssertionParameter {
        static let rpID = 0x01
        static let clientDataHash = 0x02
        static let allowList = 0x03
        static let extensions = 0x04
        static let options = 0x05
        static let pinUvAuthParam = 0x06
        static let pinUvAuthProtocol = 0x07
    }

    /// authenticatorGetAssertion and GetNextAssertion response members (CTAP 2.1 §6.2 "Response").
    enum AssertionResponseMember {
        static let credential = 0x01
        static let authData = 0x02
        static let signature = 0x03
        static let user = 0x04
        static let numberOfCredentials = 0x05
    }

    /// What getNextAssertion continues with (CTAP 2.1 §6.3).
    struct PendingAssertions {
        var rpIDHash: [UInt8]
        var clientDataHash: [UInt8]
        var flags: AuthenticatorData.Flags
        var extensions: AssertionExtensionRequest
        var remaining: [ResolvedCredential]
        var lastUsed: ContinuousClock.Instant
        /// Whether the largeBlobKey extension was asked for (CTAP 2.1 §12.3).
        var largeBlobKey: Bool
    }

    /// authenticatorGetAssertion (CTAP 2.1 §6.2.2).
    func getAssertion(
        _ raw: ArraySlice<UInt8>, keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(VirtualKeyError) -> CBORMap {
        typealias P = GetAssertionParameter
        let p = try CTAPParameters(request: raw, context: "getAssertion")
        guard
            let rpID = try p.text(P.rpID, required: true),
            let clientDataHash = try p.bytes(P.clientDataHash, required: true)
        else { throw .rejected(.missingParameter, "getAssertion lacks a required parameter.") }
        let allowItems = try p.array(P.allowList)
        let extensions = try p.nested(P.extensions, "extensions")
        let options = try p.nested(P.options, "options")
        let pinUvAuthParam = try p.bytes(P.pinUvAuthParam)
        let pinUvAuthProtocol = try p.unsigned(P.pinUvAuthProtocol)

        guard clientDataHash.count == Self.clientDataHashLength else {
            throw .rejected(.invalidLength, "clientDataHash is \(clientDataHash.count) bytes, not 32.")
        }
        try await checkPINProbeAndProtocol(pinUvAuthParam, protocol: pinUvAuthProtocol, keepalive: keepalive)
        if try options?.bool("rk") != nil {
            throw .rejected(.unsupportedOption, "The rk option is not valid for getAssertion.")
        }
        let up = try options?.bool("up") ?? true
        // pinUvAuthParam takes precedence over the deprecated "uv" option (§6.2.2 step 5).
        var uvOption = try options?.bool("uv") ?? false
        // alwaysUv: built-in UV when there is one, else a pinUvAuthParam (§6.2.2 step 6).
        if alwaysUVEnabled && pinUvAuthParam == nil && hasBuiltInUserVerification {
            uvOption = true
        }
        let uv = pinUvAuthParam == nil && uvOption
        if uv && !hasBuiltInUserVerification {
            throw .rejected(.invalidOption, "This key has no built-in user verification.")
        }
        let verification = try await establishVerification(
            param: pinUvAuthParam, protocol: pinUvAuthProtocol, uvOption: uv, clientDataHash: clientDataHash,
            permission: .getAssertion, rpID: rpID, puatRequired: alwaysUVEnabled, keepalive: keepalive)
        // Unknown extensions are ignored (§6.2.2 step 8).
        let extensionRequest = try assertionExtensionRequest(extensions)
        let wantsLargeBlobKey = try largeBlobKeyRequested(extensions, makeCredentialRK: nil)

        let rpIDHash = Array(SHA256.hash(data: Array(rpID.utf8)))
        var found: [ResolvedCredential] = []
        let allowList = try allowItems.map { (items) throws(VirtualKeyError) in
            try CredentialDescriptor.list(
                items, context: "allowList", maxCount: configuration.maxCredentialCountInList,
                maxIDLength: configuration.maxCredentialIdLength)
        }
        if let allowList, !allowList.isEmpty {
            for descriptor in allowList where descriptor.type == "public-key" {
                if let credential = resolve(descriptor.id, rpID: rpID, rpIDHash: rpIDHash),
                    usable(credential, allowListed: true, userVerified: verification.userVerified)
                {
                    found = [credential]
                    break
                }
            }
        } else {
            // Discoverable credentials, most recently created first (§6.2.2 step 12).
            for stored in state.credentials.reversed() where stored.rpID == rpID {
                if let key = credentialKey(stored.algorithm, seed: stored.seed) {
                    let credential = ResolvedCredential(id: stored.id, key: key, discoverable: stored)
                    if usable(credential, allowListed: false, userVerified: verification.userVerified) {
                        found.append(credential)
                    }
                }
            }
        }
        guard let first = found.first else {
            throw .rejected(.noCredentials, "No credential on this key matches the request.")
        }

        var flags: AuthenticatorData.Flags = []
        if up {
            // §6.2.2 step 9: cached presence counts once, then the token's flags are used up.
            if !verification.userPresent { try await collectUserPresence(keepalive: keepalive) }
            flags.insert(.userPresent)
            clientPINSession.tokenState.consume()
        }
        if verification.userVerified { flags.insert(.userVerified) }

        let discovered = allowList?.isEmpty ?? true
        var response = try assertion(
            first, rpIDHash: rpIDHash, clientDataHash: clientDataHash, flags: flags,
            extensions: extensionRequest)
        addLargeBlobKey(to: &response, credentialID: first.id, requested: wantsLargeBlobKey)
        if discovered && found.count > 1 {
            response[AssertionResponseMember.numberOfCredentials] = .int(found.count)
            pendingAssertions = PendingAssertions(
                rpIDHash: rpIDHash, clientDataHash: clientDataHash, flags: flags,
                extensions: extensionRequest,
                remaining: Array(found.dropFirst()), lastUsed: now, largeBlobKey: wantsLargeBlobKey)
        }
        try persist()
        return response
    }

    /// authenticatorGetNextAssertion (CTAP 2.1 §6.3).
    func getNextAssertion() throws(VirtualKeyError) -> CBORMap {
        guard var pending = pendingAssertions, !pending.remaining.isEmpty else {
            throw .rejected(.notAllowed, "There is no getAssertion to continue.")
        }
        guard now - pending.lastUsed < configuration.getNextAssertionWindow else {
            pendingAssertions = nil
            throw .rejected(.notAllowed, "The getNextAssertion window has closed.")
        }
        let next = pending.remaining.removeFirst()
        pending.lastUsed = now
        pendingAssertions = pending.remaining.isEmpty ? nil : pending
        var response = try assertion(
            next, rpIDHash: pending.rpIDHash, clientDataHash: pending.clientDataHash, flags: pending.flags,
            extensions: pending.extensions)
        addLargeBlobKey(to: &response, credentialID: next.id, requested: pending.largeBlobKey)
        try persist()
        return response
    }

    /// One assertion response: credential, authData, signature and, for a discoverable
    /// credential, the user (names only after user verification, §6.2.2 step 12).
    func assertion(
        _ credential: ResolvedCredential, rpIDHash: [UInt8], clientDataHash: [UInt8],
        flags: AuthenticatorData.Flags, extensions: AssertionExtensionRequest
    ) throws(VirtualKeyError) -> CBORMap {
        let authData = AuthenticatorData(
            rpIDHash: rpIDHash, flags: flags, signCount: nextSignatureCount(credentialID: credential.id),
            extensions: try assertionExtensionOutputs(credential, request: extensions, flags: flags)
        ).bytes
        let signature = try credential.key.sign(authData + clientDataHash)
        var response = CBORMap()
        response[AssertionResponseMember.credential] = .map([
            "id": .byteString(credential.id), "type": "public-key",
        ])
        response[AssertionResponseMember.authData] = .byteString(authData)
        response[AssertionResponseMember.signature] = .byteString(signature)
        if let stored = credential.discoverable {
            var user: CBORMap = ["id": .byteString(stored.userID)]
            if flags.contains(.userVerified) {
                if let name = stored.userName { user["name"] = .textString(name) }
                if let displayName = stored.userDisplayName { user["displayName"] = .textString(displayName) }
            }
            response[AssertionResponseMember.user] = .map(user)
        }
        return response
    }
}
