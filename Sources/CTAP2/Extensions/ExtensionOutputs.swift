import CBOR

/// The authenticator extension outputs in authenticator data (CTAP 2.2 §12), as types.
///
/// makeCredential and getAssertion use some identifiers with different types (`credBlob` is a
/// boolean after makeCredential and the blob after getAssertion; `hmac-secret` is a boolean,
/// then the encrypted output), so each has its own member. Outputs this type does not know are
/// kept in ``unknown``; a known identifier with an unexpected type is a malformed response.
public struct AuthenticatorExtensionOutputs: Hashable, Sendable, CustomStringConvertible {
    /// `credProtect`: the level the new credential got.
    public var credProtect: CredentialProtectionPolicy?
    /// `credBlob` after makeCredential: whether the blob was stored.
    public var credBlobStored: Bool?
    /// `credBlob` after getAssertion: the stored blob (empty when none was stored).
    public var credBlob: [UInt8]?
    /// `hmac-secret` after makeCredential: whether the credential has an hmac-secret.
    public var hmacSecretCreated: Bool?
    /// `hmac-secret` after getAssertion: the encrypted output (decrypt with ``HMACSecretOutput``).
    public var hmacSecretEncrypted: [UInt8]?
    /// `hmac-secret-mc` after makeCredential: the encrypted output.
    public var hmacSecretMakeCredentialEncrypted: [UInt8]?
    /// `minPinLength`: the key's current minimum PIN length.
    public var minPINLength: UInt64?
    /// `thirdPartyPayment`: whether the credential may be used for third-party payment.
    public var thirdPartyPayment: Bool?
    /// Outputs with other identifiers, as sent.
    public var unknown: CBORMap

    /// No outputs.
    public init() { unknown = CBORMap() }

    /// Parses the extension map of authenticator data.
    public init(map: CBORMap) throws(CTAP2Error) {
        self.init()
        for entry in map {
            guard let name = entry.key.stringValue else {
                unknown[entry.key] = entry.value
                continue
            }
            let value = entry.value
            func wrongType(_ expected: String) -> CTAP2Error {
                CTAP2Error.malformed("The \(name) extension output is not \(expected).")
            }
            switch ExtensionIdentifier(rawValue: name) {
            case .credProtect:
                guard let level = value.uint64Value else { throw wrongType("an unsigned integer") }
                credProtect = CredentialProtectionPolicy(rawValue: level)
            case .credBlob:
                if let stored = value.boolValue {
                    credBlobStored = stored
                } else if let blob = value.bytesValue {
                    credBlob = blob
                } else {
                    throw wrongType("a boolean or a byte string")
                }
            case .hmacSecret:
                if let created = value.boolValue {
                    hmacSecretCreated = created
                } else if let encrypted = value.bytesValue {
                    hmacSecretEncrypted = encrypted
                } else {
                    throw wrongType("a boolean or a byte string")
                }
            case .hmacSecretMakeCredential:
                guard let encrypted = value.bytesValue else { throw wrongType("a byte string") }
                hmacSecretMakeCredentialEncrypted = encrypted
            case .minPINLength:
                guard let length = value.uint64Value else { throw wrongType("an unsigned integer") }
                minPINLength = length
            case .thirdPartyPayment:
                guard let flag = value.boolValue else { throw wrongType("a boolean") }
                thirdPartyPayment = flag
            default:
                unknown[entry.key] = value
            }
        }
    }

    /// Leaves the hmac-secret ciphertexts out (they are of no use without the shared secret,
    /// but there is no reason to print them either).
    public var description: String {
        var parts: [String] = []
        if let credProtect { parts.append("credProtect: \(credProtect)") }
        if let credBlobStored { parts.append("credBlob: \(credBlobStored)") }
        if let credBlob { parts.append("credBlob: \(credBlob.count) bytes") }
        if let hmacSecretCreated { parts.append("hmac-secret: \(hmacSecretCreated)") }
        if hmacSecretEncrypted != nil { parts.append("hmac-secret: (encrypted)") }
        if hmacSecretMakeCredentialEncrypted != nil { parts.append("hmac-secret-mc: (encrypted)") }
        if let minPINLength { parts.append("minPinLength: \(minPINLength)") }
        if let thirdPartyPayment { parts.append("thirdPartyPayment: \(thirdPartyPayment)") }
        if !unknown.isEmpty { parts.append("+\(unknown.count) unknown") }
        return "AuthenticatorExtensionOutputs(\(parts.joined(separator: ", ")))"
    }
}

extension AuthenticatorData {
    /// The extension outputs as types (empty when the ED flag is clear).
    public func extensionOutputs() throws(CTAP2Error) -> AuthenticatorExtensionOutputs {
        guard let extensions else { return AuthenticatorExtensionOutputs() }
        return try AuthenticatorExtensionOutputs(map: extensions)
    }
}
