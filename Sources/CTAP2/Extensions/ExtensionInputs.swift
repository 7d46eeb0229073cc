import CBOR

/// Typed authenticator extension inputs for authenticatorMakeCredential (CTAP 2.2 §12),
/// encoded into ``MakeCredentialRequest/extensions`` with ``cbor``.
///
/// Extensions this type has no member for go in ``additionalExtensionInputs``, sent as given;
/// a typed member wins over the same identifier there.
public struct MakeCredentialExtensionInputs: Hashable, Sendable, CustomStringConvertible {
    /// `credProtect` (§12.1): the protection level to give the credential.
    public var credProtect: CredentialProtectionPolicy?
    /// `credBlob` (§12.2): bytes to store with the credential (at most getInfo's maxCredBlobLength).
    public var credBlob: [UInt8]?
    /// `largeBlobKey` (§12.3): ask for the credential's largeBlobKey (response member 0x05).
    public var largeBlobKey = false
    /// `minPinLength` (§12.4): ask for the minimum PIN length (for RPs the key was configured to tell).
    public var minPINLength = false
    /// `hmac-secret` (§12.5): give the credential an hmac-secret (PRF).
    public var hmacSecret = false
    /// `hmac-secret-mc` (§12.6): evaluate the hmac-secret already at creation.
    public var hmacSecretMakeCredential: HMACSecretInput?
    /// `thirdPartyPayment` (§12.9): make the credential usable for third-party payment.
    public var thirdPartyPayment = false
    /// Other inputs by identifier, sent as given: the raw escape hatch.
    public var additionalExtensionInputs = CBORMap()

    /// No extensions.
    public init() {}

    /// Whether nothing would be sent.
    public var isEmpty: Bool { cbor.isEmpty }

    /// The extensions map of the request.
    public var cbor: CBORMap {
        var m = additionalExtensionInputs.withoutTypedInputs([
            .credProtect, .credBlob, .largeBlobKey, .minPINLength, .hmacSecret, .hmacSecretMakeCredential,
            .thirdPartyPayment,
        ])
        if let credProtect { m[.textString(ExtensionIdentifier.credProtect.rawValue)] = .unsigned(credProtect.rawValue) }
        if let credBlob { m[.textString(ExtensionIdentifier.credBlob.rawValue)] = .byteString(credBlob) }
        if largeBlobKey { m[.textString(ExtensionIdentifier.largeBlobKey.rawValue)] = true }
        if minPINLength { m[.textString(ExtensionIdentifier.minPINLength.rawValue)] = true }
        if hmacSecret || hmacSecretMakeCredential != nil {
            m[.textString(ExtensionIdentifier.hmacSecret.rawValue)] = true
        }
        if let hmacSecretMakeCredential {
            m[.textString(ExtensionIdentifier.hmacSecretMakeCredential.rawValue)] = .map(hmacSecretMakeCredential.cbor)
        }
        if thirdPartyPayment { m[.textString(ExtensionIdentifier.thirdPartyPayment.rawValue)] = true }
        return m
    }

    public var description: String {
        var parts: [String] = []
        if let credProtect { parts.append("credProtect: \(credProtect)") }
        if let credBlob { parts.append("credBlob: \(credBlob.count) bytes") }
        if largeBlobKey { parts.append("largeBlobKey") }
        if minPINLength { parts.append("minPinLength") }
        if hmacSecret { parts.append("hmac-secret") }
        if let hmacSecretMakeCredential { parts.append("hmac-secret-mc: \(hmacSecretMakeCredential)") }
        if thirdPartyPayment { parts.append("thirdPartyPayment") }
        if !additionalExtensionInputs.isEmpty { parts.append("+\(additionalExtensionInputs.count) raw") }
        return "MakeCredentialExtensionInputs(\(parts.joined(separator: ", ")))"
    }
}

/// Typed authenticator extension inputs for authenticatorGetAssertion (CTAP 2.2 §12),
/// encoded into ``GetAssertionRequest/extensions`` with ``cbor``.
public struct GetAssertionExtensionInputs: Hashable, Sendable, CustomStringConvertible {
    /// `hmac-secret` (§12.5): the encrypted salts to evaluate the credential's PRF with.
    public var hmacSecret: HMACSecretInput?
    /// `credBlob` (§12.2, `getCredBlob` in WebAuthn): ask for the credential's stored blob.
    public var credBlob = false
    /// `largeBlobKey` (§12.3): ask for the credential's largeBlobKey (response member 0x07).
    public var largeBlobKey = false
    /// `thirdPartyPayment` (§12.9): ask whether the credential is enabled for third-party payment.
    public var thirdPartyPayment = false
    /// Other inputs by identifier, sent as given: the raw escape hatch.
    public var additionalExtensionInputs = CBORMap()

    /// No extensions.
    public init() {}

    /// Whether nothing would be sent.
    public var isEmpty: Bool { cbor.isEmpty }

    /// The extensions map of the request.
    public var cbor: CBORMap {
        var m = additionalExtensionInputs.withoutTypedInputs([.hmacSecret, .credBlob, .largeBlobKey, .thirdPartyPayment])
        if thirdPartyPayment { m[.textString(ExtensionIdentifier.thirdPartyPayment.rawValue)] = true }
        if let hmacSecret { m[.textString(ExtensionIdentifier.hmacSecret.rawValue)] = .map(hmacSecret.cbor) }
        if credBlob { m[.textString(ExtensionIdentifier.credBlob.rawValue)] = true }
        if largeBlobKey { m[.textString(ExtensionIdentifier.largeBlobKey.rawValue)] = true }
        return m
    }

    public var description: String {
        var parts: [String] = []
        if let hmacSecret { parts.append("hmac-secret: \(hmacSecret)") }
        if credBlob { parts.append("credBlob") }
        if largeBlobKey { parts.append("largeBlobKey") }
        if thirdPartyPayment { parts.append("thirdPartyPayment") }
        if !additionalExtensionInputs.isEmpty { parts.append("+\(additionalExtensionInputs.count) raw") }
        return "GetAssertionExtensionInputs(\(parts.joined(separator: ", ")))"
    }
}

extension CBORMap {
    /// The raw extension inputs without those a typed member of the request sets (the typed
    /// member wins, so one identifier is never sent twice).
    fileprivate func withoutTypedInputs(_ typed: Set<ExtensionIdentifier>) -> CBORMap {
        let names = Set(typed.map(\.rawValue))
        var m = CBORMap()
        for entry in self where !(entry.key.stringValue.map(names.contains) ?? false) {
            m[entry.key] = entry.value
        }
        return m
    }
}
