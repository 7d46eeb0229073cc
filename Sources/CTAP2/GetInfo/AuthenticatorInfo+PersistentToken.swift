import Crypto

/// encIdentifier and encCredStoreState (CTAP 2.2 and 2.3 §6.4), decrypted with a persistent
/// PinUvAuthToken (permission pcmr): IV ‖ AES-128-CBC ciphertext under
/// HKDF-SHA-256(salt: 32 zero bytes, IKM: the token, info: the member's name, L: 16).
///
/// AES-CBC has no integrity check: a token the key no longer holds (after a PIN change or a
/// reset) decrypts to other bytes without an error. Callers that must know compare the result
/// with a value decrypted earlier, or use the token once with credential management.
extension AuthenticatorInfo {
    /// The HKDF info of each member.
    public enum PersistentTokenMember: String, Sendable {
        /// encIdentifier (0x19): the key's device identifier.
        case encIdentifier
        /// encCredStoreState (0x1E): a value that changes with the discoverable credentials.
        case encCredStoreState
    }

    /// The longest encrypted member accepted: an IV and four blocks (the spec's values are one block).
    static let maxPersistentTokenMemberLength = 16 + 64

    /// The device identifier, decrypted with `token`; nil when the key sends no encIdentifier.
    public func identifier(decryptingWith token: PINUVAuthToken) throws(CTAP2Error) -> [UInt8]? {
        try decrypt(.encIdentifier, with: token)
    }

    /// The credential store state, decrypted with `token`; nil when the key sends no
    /// encCredStoreState.
    public func credentialStoreState(decryptingWith token: PINUVAuthToken) throws(CTAP2Error) -> [UInt8]? {
        try decrypt(.encCredStoreState, with: token)
    }

    /// A member decrypted with `token`, nil when the key does not send it.
    public func decrypt(_ member: PersistentTokenMember, with token: PINUVAuthToken) throws(CTAP2Error) -> [UInt8]? {
        let encrypted: [UInt8]?
        switch member {
        case .encIdentifier: encrypted = encIdentifier
        case .encCredStoreState: encrypted = encCredStoreState
        }
        guard let encrypted else { return nil }
        return try Self.decrypt(encrypted, member: member, token: token)
    }

    /// Decrypts one member's bytes: length checked, key derived inside the token.
    static func decrypt(
        _ encrypted: [UInt8], member: PersistentTokenMember, token: PINUVAuthToken
    ) throws(CTAP2Error) -> [UInt8] {
        guard encrypted.count >= 32, encrypted.count % 16 == 0,
            encrypted.count <= maxPersistentTokenMemberLength
        else {
            throw CTAP2Error.malformed(
                "The getInfo \(member.rawValue) is \(encrypted.count) bytes: not an IV and whole AES blocks.")
        }
        var key = try token.derivedKey(info: member.rawValue, length: 16)
        defer { key.wipe() }
        return try AESCBC.run(
            encrypt: false, key: key, iv: Array(encrypted[..<16]), Array(encrypted[16...]))
    }
}

extension PINUVAuthToken {
    /// Whether this is a persistent token (pcmr and nothing else, CTAP 2.2 §6.5.5.7): the only
    /// kind a platform may keep beyond one operation.
    public var isPersistent: Bool { permissions == .persistentCredentialManagementReadOnly }

    /// The token's bytes, for storing a persistent token (see ``isPersistent``) in a file only
    /// its owner can read; any other token refuses. The caller wipes the result.
    public func persistentTokenBytes() throws(CTAP2Error) -> [UInt8] {
        guard isPersistent else {
            throw CTAP2Error(
                .unauthorizedPermission, "Only a persistent token (pcmr permission alone) may be stored.")
        }
        return try withSecretBytes { $0 }
    }

    /// HKDF-SHA-256(salt: 32 zero bytes, IKM: the token, info, L: `length`).
    func derivedKey(info: String, length: Int) throws(CTAP2Error) -> [UInt8] {
        try withSecretBytes { bytes in
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: bytes), salt: [UInt8](repeating: 0, count: 32),
                info: Array(info.utf8), outputByteCount: length
            ).withUnsafeBytes { [UInt8]($0) }
        }
    }
}
