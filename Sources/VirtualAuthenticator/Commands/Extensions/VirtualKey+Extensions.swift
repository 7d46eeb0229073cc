import _SecurityKeyInternals
import CBOR
import Crypto

/// A credential's protection level (CTAP 2.1 §12.1 credProtect).
enum CredProtectLevel: UInt8, Sendable, Hashable {
    /// userVerificationOptional: usable with or without user verification.
    case optional = 1
    /// userVerificationOptionalWithCredentialIDList: without UV only when the platform names it.
    case optionalWithCredentialIDList = 2
    /// userVerificationRequired: never usable, nor even discovered, without UV.
    case required = 3
}

/// The two per-credential secrets of hmac-secret (CTAP 2.1 §12.5): which one is used depends
/// on whether the user was verified, so that a secret obtained without UV says nothing about
/// the one obtained with UV.
struct CredRandoms: Sendable, Equatable {
    static let length = 32
    var withUV: [UInt8]
    var withoutUV: [UInt8]

    static func random() -> CredRandoms {
        CredRandoms(withUV: SystemRandom.bytes(length), withoutUV: SystemRandom.bytes(length))
    }
}

/// What a credential keeps of its extensions. Discoverable credentials store it in the state
/// file; non-discoverable ones carry the credProtect level and hmac-secret flag in their sealed
/// ID, and their credRandoms are derived from the wrapping key and the ID.
struct CredentialExtensionState: Sendable, Equatable {
    var credProtect: CredProtectLevel = .optional
    var credRandoms: CredRandoms?
    var credBlob: [UInt8]?
    var thirdPartyPayment = false
}

/// The extension identifiers this key knows (CTAP 2.1 §12, CTAP 2.2 §12.7 hmac-secret-mc).
enum ExtensionIdentifier {
    static let credProtect = "credProtect"
    static let credBlob = "credBlob"
    static let hmacSecret = "hmac-secret"
    static let hmacSecretMakeCredential = "hmac-secret-mc"
    static let minPinLength = "minPinLength"
    static let largeBlobKey = "largeBlobKey"
    /// CTAP 2.2 §12.9.
    static let thirdPartyPayment = "thirdPartyPayment"

    /// Everything ``VirtualKey/Configuration/extensions`` may list.
    static let implemented: Set<String> = [
        credProtect, credBlob, hmacSecret, hmacSecretMakeCredential, minPinLength, largeBlobKey, thirdPartyPayment,
    ]
}

extension VirtualKey.Configuration {
    /// The extensions getInfo lists and the key processes: ``extensions`` when set, otherwise
    /// what a real key of this profile offers. A CTAP 2.0 key with clientPIN offers hmac-secret;
    /// FIDO_2_1_PRE keys add credProtect; CTAP 2.1 keys add credBlob; CTAP 2.2 keys add
    /// hmac-secret-mc; minPinLength comes with `setMinPINLength`; FIDO_2_2/FIDO_2_3 keys add
    /// thirdPartyPayment.
    var effectiveExtensions: [String] {
        if let extensions { return extensions }
        var list: [String] = []
        // hmac-secret agrees on its shared secret through clientPIN's getKeyAgreement.
        if supportsClientPIN { list.append(ExtensionIdentifier.hmacSecret) }
        if isCTAP21 || versions.contains("FIDO_2_1_PRE") || versions.contains("FIDO_2_2") {
            list.append(ExtensionIdentifier.credProtect)
        }
        if isCTAP21 || versions.contains("FIDO_2_2") { list.append(ExtensionIdentifier.credBlob) }
        if supportsClientPIN && versions.contains("FIDO_2_2") {
            list.append(ExtensionIdentifier.hmacSecretMakeCredential)
        }
        if supportsSetMinPINLength { list.append(ExtensionIdentifier.minPinLength) }
        // largeBlobKey comes with the largeBlobs command (CTAP 2.1 §12.3).
        if supportsLargeBlobs { list.append(ExtensionIdentifier.largeBlobKey) }
        if isCTAP22 { list.append(ExtensionIdentifier.thirdPartyPayment) }
        return list
    }
}

extension VirtualKey.GetInfoMember {
    /// maxCredBlobLength (CTAP 2.1 §6.4), reported when credBlob is supported.
    static let maxCredBlobLength = 0x0F
}

/// The hmac-secret input of getAssertion, or hmac-secret-mc's at makeCredential (CTAP 2.1
/// §12.5, CTAP 2.2 §12.7), once its saltAuth has verified and its salts are decrypted.
struct HMACSecretRequest: Sendable {
    /// hmac-secret input members.
    enum Member {
        static let keyAgreement = 0x01
        static let saltEnc = 0x02
        static let saltAuth = 0x03
        static let pinUvAuthProtocol = 0x04
    }

    let pinProtocol: PINProtocol
    var sharedSecret: [UInt8]
    /// salt1, or salt1 ‖ salt2.
    var salts: [UInt8]

    /// The encrypted outputs HMAC-SHA-256(CredRandom, salt1) [‖ HMAC-SHA-256(CredRandom, salt2)],
    /// with the CredRandom of the request's user verification state.
    func output(_ randoms: CredRandoms, userVerified: Bool) throws(VirtualKeyError) -> [UInt8] {
        let key = SymmetricKey(data: userVerified ? randoms.withUV : randoms.withoutUV)
        var outputs: [UInt8] = []
        defer { outputs.zeroize() }
        var offset = 0
        while offset < salts.count {
            let salt = salts[offset..<offset + CredRandoms.length]
            outputs += Array(HMAC<SHA256>.authenticationCode(for: salt, using: key))
            offset += CredRandoms.length
        }
        return try pinProtocol.encrypt(key: sharedSecret, outputs)
    }

    /// Forgets the secrets.
    mutating func wipe() {
        sharedSecret.zeroize()
        salts.zeroize()
    }
}

/// What makeCredential's extensions ask for, for the extensions this key supports.
struct MakeCredentialExtensionRequest: Sendable {
    var credProtect: CredProtectLevel?
    var hmacSecret = false
    var hmacSecretMakeCredential: HMACSecretRequest?
    var credBlob: [UInt8]?
    var thirdPartyPayment = false

    /// The flags sealed into the new credential's ID.
    var idFlags: CredentialID.Flags {
        CredentialID.Flags(credProtect: credProtect, hmacSecret: hmacSecret, thirdPartyPayment: thirdPartyPayment)
    }
}

/// What getAssertion's extensions ask for; kept for getNextAssertion.
struct AssertionExtensionRequest: Sendable {
    var hmacSecret: HMACSecretRequest?
    var credBlob = false
    var thirdPartyPayment = false
}

extension CTAPParameters {
    /// A nested map under a text key (extension inputs).
    func nested(_ key: String) throws(VirtualKeyError) -> CTAPParameters? {
        guard let v = map[key] else { return nil }
        guard let m = v.mapValue else {
            throw .rejected(.cborUnexpectedType, "\(context) member \(key) is not a map.")
        }
        return CTAPParameters(m, context: key)
    }
}

extension VirtualKey {
    /// Extension identifiers this key processes (getInfo `extensions`).
    var supportedExtensions: [String] { configuration.effectiveExtensions }

    /// The minPinLength extension identifier (CTAP 2.1 §12.4).
    static let minPinLengthExtension = ExtensionIdentifier.minPinLength

    private func supports(_ name: String) -> Bool { supportedExtensions.contains(name) }

    /// getInfo members that come with extensions: maxCredBlobLength with credBlob.
    func addExtensionInfo(to info: inout CBORMap) {
        if supports(ExtensionIdentifier.credBlob) {
            info[GetInfoMember.maxCredBlobLength] = .int(configuration.maxCredBlobLength)
        }
    }

    // MARK: makeCredential

    /// Reads makeCredential's extension inputs (CTAP 2.1 §12.1, §12.2, §12.5; CTAP 2.2 §12.7);
    /// extensions this key does not support are ignored. A credProtect level other than 1–3 is
    /// CTAP2_ERR_INVALID_OPTION; hmac-secret-mc fails as getAssertion's hmac-secret does.
    func makeCredentialExtensionRequest(_ extensions: CTAPParameters?) throws(VirtualKeyError)
        -> MakeCredentialExtensionRequest
    {
        var request = MakeCredentialExtensionRequest()
        guard let extensions else { return request }
        if supports(ExtensionIdentifier.credProtect),
            let level = try extensions.integer(ExtensionIdentifier.credProtect)
        {
            guard let value = UInt8(exactly: level), let parsed = CredProtectLevel(rawValue: value) else {
                throw .rejected(.invalidOption, "credProtect must be 1, 2 or 3, not \(level).")
            }
            request.credProtect = parsed
        }
        if supports(ExtensionIdentifier.hmacSecret) {
            request.hmacSecret = try extensions.bool(ExtensionIdentifier.hmacSecret) ?? false
        }
        // hmac-secret-mc only means something alongside hmac-secret: true.
        if request.hmacSecret, supports(ExtensionIdentifier.hmacSecretMakeCredential),
            let input = try extensions.nested(ExtensionIdentifier.hmacSecretMakeCredential)
        {
            request.hmacSecretMakeCredential = try hmacSecretRequest(input)
        }
        if supports(ExtensionIdentifier.credBlob) {
            request.credBlob = try extensions.bytes(ExtensionIdentifier.credBlob)
        }
        if supports(ExtensionIdentifier.thirdPartyPayment) {
            request.thirdPartyPayment = try extensions.bool(ExtensionIdentifier.thirdPartyPayment) ?? false
        }
        return request
    }

    /// The new credential's extension state: a discoverable credential gets fresh credRandoms
    /// and keeps its credBlob (if it fits maxCredBlobLength); a non-discoverable one derives
    /// its credRandoms from its ID and keeps no blob.
    func newCredentialExtensionState(
        _ request: MakeCredentialExtensionRequest, credentialID: [UInt8], discoverable: Bool
    ) -> CredentialExtensionState {
        var state = CredentialExtensionState()
        state.credProtect = request.credProtect ?? .optional
        if request.hmacSecret {
            state.credRandoms = discoverable ? .random() : derivedCredRandoms(credentialID)
        }
        if discoverable, let blob = request.credBlob, blob.count <= configuration.maxCredBlobLength {
            state.credBlob = blob
        }
        state.thirdPartyPayment = request.thirdPartyPayment
        return state
    }

    /// The authenticator extension outputs of makeCredential (added to `outputs`).
    func addMakeCredentialExtensionOutputs(
        _ request: MakeCredentialExtensionRequest, state: CredentialExtensionState, userVerified: Bool,
        to outputs: inout CBORMap
    ) throws(VirtualKeyError) {
        if let level = request.credProtect {
            outputs[.textString(ExtensionIdentifier.credProtect)] = .int(Int(level.rawValue))
        }
        if request.hmacSecret {
            outputs[.textString(ExtensionIdentifier.hmacSecret)] = true
        }
        if var mc = request.hmacSecretMakeCredential, let randoms = state.credRandoms {
            defer { mc.wipe() }
            outputs[.textString(ExtensionIdentifier.hmacSecretMakeCredential)] = .byteString(
                try mc.output(randoms, userVerified: userVerified))
        }
        if request.credBlob != nil {
            outputs[.textString(ExtensionIdentifier.credBlob)] = .boolean(state.credBlob != nil)
        }
    }

    /// Whether an excludeList entry counts (CTAP 2.1 §6.1.2 step 12): a userVerificationRequired
    /// credential is only revealed to a request that verified the user.
    func excludes(_ credential: ResolvedCredential, userVerified: Bool) -> Bool {
        credential.extensionState(wrappingKey: wrappingKey).credProtect != .required || userVerified
    }

    // MARK: getAssertion

    /// Reads getAssertion's extension inputs (CTAP 2.1 §12.2 credBlob, §12.5 hmac-secret).
    func assertionExtensionRequest(_ extensions: CTAPParameters?) throws(VirtualKeyError)
        -> AssertionExtensionRequest
    {
        var request = AssertionExtensionRequest()
        guard let extensions else { return request }
        if supports(ExtensionIdentifier.hmacSecret),
            let input = try extensions.nested(ExtensionIdentifier.hmacSecret)
        {
            request.hmacSecret = try hmacSecretRequest(input)
        }
        if supports(ExtensionIdentifier.credBlob) {
            request.credBlob = try extensions.bool(ExtensionIdentifier.credBlob) ?? false
        }
        if supports(ExtensionIdentifier.thirdPartyPayment) {
            request.thirdPartyPayment = try extensions.bool(ExtensionIdentifier.thirdPartyPayment) ?? false
        }
        return request
    }

    /// credProtect in getAssertion (CTAP 2.1 §12.1, §6.2.2 step 7): without user verification a
    /// userVerificationRequired credential is never used, and a
    /// userVerificationOptionalWithCredentialIDList one only when the allowList names it.
    func usable(_ credential: ResolvedCredential, allowListed: Bool, userVerified: Bool) -> Bool {
        if userVerified { return true }
        switch credential.extensionState(wrappingKey: wrappingKey).credProtect {
        case .optional: return true
        case .optionalWithCredentialIDList: return allowListed
        case .required: return false
        }
    }

    /// The authenticator extension outputs of one assertion: hmac-secret for a credential made
    /// with it (none otherwise), credBlob (empty when the credential has none).
    func assertionExtensionOutputs(
        _ credential: ResolvedCredential, request: AssertionExtensionRequest, flags: AuthenticatorData.Flags
    ) throws(VirtualKeyError) -> CBORMap {
        var outputs = CBORMap()
        let state = credential.extensionState(wrappingKey: wrappingKey)
        if let hmac = request.hmacSecret, let randoms = state.credRandoms {
            outputs[.textString(ExtensionIdentifier.hmacSecret)] = .byteString(
                try hmac.output(randoms, userVerified: flags.contains(.userVerified)))
        }
        if request.credBlob {
            outputs[.textString(ExtensionIdentifier.credBlob)] = .byteString(state.credBlob ?? [])
        }
        // CTAP 2.2 §12.9: whether the credential is enabled for third-party payment.
        if request.thirdPartyPayment {
            outputs[.textString(ExtensionIdentifier.thirdPartyPayment)] = .boolean(state.thirdPartyPayment)
        }
        return outputs
    }

    // MARK: hmac-secret

    /// Checks and decrypts an hmac-secret (or hmac-secret-mc) input (CTAP 2.1 §12.5
    /// "authenticator processing"): a missing member is CTAP2_ERR_MISSING_PARAMETER, an
    /// unsupported protocol or unusable key agreement CTAP1_ERR_INVALID_PARAMETER, a saltAuth
    /// that does not verify CTAP2_ERR_PIN_AUTH_INVALID, salts other than 32 or 64 bytes
    /// CTAP1_ERR_INVALID_LENGTH.
    func hmacSecretRequest(_ input: CTAPParameters) throws(VirtualKeyError) -> HMACSecretRequest {
        typealias M = HMACSecretRequest.Member
        guard let keyAgreement = try input.nested(M.keyAgreement, "keyAgreement", required: true),
            let saltEnc = try input.bytes(M.saltEnc, required: true),
            let saltAuth = try input.bytes(M.saltAuth, required: true)
        else { throw .rejected(.missingParameter, "The hmac-secret input lacks a member.") }
        // CTAP 2.1 platforms may leave the protocol out when it is one (§12.5).
        let rawProtocol = try input.unsigned(M.pinUvAuthProtocol) ?? PINProtocol.one.rawValue
        let pinProtocol = try PINProtocol.negotiate(rawProtocol, supported: configuration.pinUvAuthProtocols)
        var sharedSecret = try agreeSharedSecret(pinProtocol, peer: keyAgreement.map)
        guard pinProtocol.verify(key: sharedSecret, saltEnc, signature: saltAuth) else {
            sharedSecret.zeroize()
            throw .rejected(.pinAuthInvalid, "The hmac-secret saltAuth does not verify.")
        }
        var salts: [UInt8]
        do {
            salts = try pinProtocol.decrypt(key: sharedSecret, saltEnc)
        } catch {
            sharedSecret.zeroize()
            throw error
        }
        guard salts.count == CredRandoms.length || salts.count == 2 * CredRandoms.length else {
            sharedSecret.zeroize()
            salts.zeroize()
            throw .rejected(.invalidLength, "hmac-secret takes one or two 32-byte salts.")
        }
        return HMACSecretRequest(pinProtocol: pinProtocol, sharedSecret: sharedSecret, salts: salts)
    }

    /// The credRandoms of a non-discoverable hmac-secret credential: HMAC-SHA-256 under the
    /// wrapping key of a label and the credential ID, so they need no storage and die with reset.
    func derivedCredRandoms(_ credentialID: [UInt8]) -> CredRandoms {
        Self.derivedCredRandoms(credentialID, wrappingKey: wrappingKey)
    }

    static func derivedCredRandoms(_ credentialID: [UInt8], wrappingKey: SymmetricKey) -> CredRandoms {
        func derive(_ label: String) -> [UInt8] {
            Array(HMAC<SHA256>.authenticationCode(for: Array(label.utf8) + credentialID, using: wrappingKey))
        }
        return CredRandoms(withUV: derive("CredRandomWithUV"), withoutUV: derive("CredRandomWithoutUV"))
    }
}

extension ResolvedCredential {
    /// The credential's extension state: stored with a discoverable credential, sealed in (and
    /// derived from) the ID of a non-discoverable one.
    func extensionState(wrappingKey: SymmetricKey) -> CredentialExtensionState {
        if let discoverable { return discoverable.extensionState }
        var state = CredentialExtensionState()
        state.credProtect = sealedFlags.credProtect
        if sealedFlags.hmacSecret {
            state.credRandoms = VirtualKey.derivedCredRandoms(id, wrappingKey: wrappingKey)
        }
        state.thirdPartyPayment = sealedFlags.thirdPartyPayment
        return state
    }
}

extension DiscoverableCredential {
    /// The extension state kept with this credential.
    var extensionState: CredentialExtensionState {
        CredentialExtensionState(
            credProtect: credProtect, credRandoms: credRandoms, credBlob: credBlob,
            thirdPartyPayment: thirdPartyPayment)
    }
}
