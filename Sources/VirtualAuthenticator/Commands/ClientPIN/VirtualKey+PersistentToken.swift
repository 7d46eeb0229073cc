import _SecurityKeyInternals
import CBOR
import Crypto

// The persistent PinUvAuthToken of CTAP 2.2 (§6.5.5.7, permission `pcmr`; getInfo option
// `perCredMgmtRO`) and the getInfo members it decrypts, `encIdentifier` (CTAP 2.2) and
// `encCredStoreState` (CTAP 2.3). Offered when ``VirtualKey/Configuration/persistentPINUVAuthToken``
// is set.
//
// The token is one 32-byte value for every PIN/UV auth protocol, kept in the state so it survives
// power cycles, and replaced when the PIN is set or changed and by reset: a platform that stored
// it finds it refused afterwards. It authenticates only the read-only credential management
// subcommands (getCredsMetadata, enumerateRPsBegin, enumerateCredentialsBegin); it never
// expires and never carries user presence.

extension VirtualKey {
    /// The getInfo members the persistent token decrypts.
    enum PersistentTokenInfoMember {
        /// encIdentifier (0x19, CTAP 2.2 §6.4).
        static let encIdentifier = 0x19
        /// encCredStoreState (0x1E, CTAP 2.3 §6.4).
        static let encCredStoreState = 0x1E
    }

    /// The HKDF info strings of the two members (CTAP 2.2 §6.4).
    enum PersistentTokenKeyInfo {
        static let encIdentifier = "encIdentifier"
        static let encCredStoreState = "encCredStoreState"
    }

    /// Gives a state of a key with the feature its persistent token if it has none yet;
    /// returns whether the state changed.
    static func ensurePersistentToken(_ configuration: Configuration, in state: inout VirtualKeyState) -> Bool {
        guard configuration.persistentPINUVAuthToken, state.persistentPINUVAuthToken == nil else { return false }
        state.persistentPINUVAuthToken = SystemRandom.bytes(PINProtocol.tokenLength)
        return true
    }

    /// Replaces the persistent token, so every stored copy stops working (PIN set or changed,
    /// reset). The caller persists the state.
    func replacePersistentToken() {
        guard configuration.persistentPINUVAuthToken else { return }
        state.persistentPINUVAuthToken?.zeroize()
        state.persistentPINUVAuthToken = SystemRandom.bytes(PINProtocol.tokenLength)
    }

    /// The device identifier encIdentifier carries: 16 bytes derived from the credential
    /// wrapping key, so stable while the key keeps its credentials and new after a reset.
    var deviceIdentifier: [UInt8] {
        Array(
            HMAC<SHA256>.authenticationCode(
                for: Array("securitykey virtual key device identifier".utf8), using: wrappingKey
            ).prefix(16))
    }

    /// The credential store state encCredStoreState carries: 16 bytes that change whenever a
    /// discoverable credential is added, deleted or updated (a MAC of the stored credentials).
    var credentialStoreState: [UInt8] {
        let stored = CBOREncoder.encode(.array(state.credentials.map { .map($0.encoded()) }))
        return Array(
            HMAC<SHA256>.authenticationCode(
                for: Array("securitykey virtual key credential store state".utf8) + stored, using: wrappingKey
            ).prefix(16))
    }

    /// IV ‖ AES-128-CBC(key, IV, plaintext), key = HKDF-SHA-256(salt: 32 zero bytes, IKM: the
    /// persistent token, info, L: 16), with a fresh random IV each time (CTAP 2.2 §6.4
    /// encIdentifier).
    func encryptedForPersistentToken(_ plaintext: [UInt8], info: String) throws(VirtualKeyError) -> [UInt8] {
        guard let token = state.persistentPINUVAuthToken else {
            throw .rejected(.other, "The key has no persistent PinUvAuthToken.")
        }
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: token), salt: [UInt8](repeating: 0, count: 32),
            info: Array(info.utf8), outputByteCount: 16
        ).withUnsafeBytes { [UInt8]($0) }
        let iv = SystemRandom.bytes(16)
        return iv + (try PINProtocol.cbc(encrypt: true, key: key, iv: iv, plaintext))
    }

    /// Adds `perCredMgmtRO`, encIdentifier and encCredStoreState to getInfo.
    func addPersistentTokenInfo(options: inout CBORMap, info: inout CBORMap) {
        guard configuration.persistentPINUVAuthToken else { return }
        options["perCredMgmtRO"] = true
        if let identifier = try? encryptedForPersistentToken(
            deviceIdentifier, info: PersistentTokenKeyInfo.encIdentifier)
        {
            info[.int(PersistentTokenInfoMember.encIdentifier)] = .byteString(identifier)
        }
        if let store = try? encryptedForPersistentToken(
            credentialStoreState, info: PersistentTokenKeyInfo.encCredStoreState)
        {
            info[.int(PersistentTokenInfoMember.encCredStoreState)] = .byteString(store)
        }
    }

    /// The persistent token, sent encrypted under the shared secret, for a request asking for
    /// pcmr and nothing else; the ordinary tokens of this power-up are left as they are.
    func issuePersistentToken(_ pinProtocol: PINProtocol, _ shared: [UInt8]) throws(VirtualKeyError) -> CBORMap {
        guard let token = state.persistentPINUVAuthToken else {
            throw .rejected(.other, "The key has no persistent PinUvAuthToken.")
        }
        secretsLog?.record(.pinUVAuthToken, protocolVersion: Int(pinProtocol.rawValue), token)
        let encrypted = try pinProtocol.encrypt(key: shared, token)
        logger.debug("persistent pinUvAuthToken issued")
        return [.int(ClientPINResponseMember.pinUvAuthToken): .byteString(encrypted)]
    }

    /// Whether `param` is the pinUvAuthParam of `message` under the persistent token with the
    /// named protocol (a key without the feature: never).
    func verifiesWithPersistentToken(
        _ param: [UInt8], protocol rawProtocol: UInt64?, message: [UInt8]
    ) throws(VirtualKeyError) -> Bool {
        guard configuration.persistentPINUVAuthToken, let token = state.persistentPINUVAuthToken else {
            return false
        }
        let chosen = try PINProtocol.negotiate(rawProtocol, supported: configuration.pinUvAuthProtocols)
        return chosen.verify(key: token, message, signature: param)
    }
}
