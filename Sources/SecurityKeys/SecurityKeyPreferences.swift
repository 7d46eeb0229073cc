/// A public-key algorithm, by its COSE identifier (IANA COSE Algorithms registry; WebAuthn L3
/// §5.8.5 `COSEAlgorithmIdentifier`).
public struct SecurityKeyAlgorithm: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The COSE algorithm identifier.
    public var rawValue: Int
    /// Creates an algorithm from its COSE identifier.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// ECDSA with P-256 and SHA-256 (-7), the default.
    public static let es256 = SecurityKeyAlgorithm(rawValue: -7)
    /// EdDSA (-8), Ed25519 on security keys.
    public static let edDSA = SecurityKeyAlgorithm(rawValue: -8)
    /// ECDSA with P-384 and SHA-384 (-35).
    public static let es384 = SecurityKeyAlgorithm(rawValue: -35)
    /// RSASSA-PKCS1-v1_5 with SHA-256 (-257).
    public static let rs256 = SecurityKeyAlgorithm(rawValue: -257)

    /// The algorithm's name, or its number.
    public var description: String {
        switch self {
        case .es256: "ES256"
        case .edDSA: "EdDSA"
        case .es384: "ES384"
        case .rs256: "RS256"
        default: "COSE(\(rawValue))"
        }
    }
}

/// How a key is reached, in WebAuthn's words (WebAuthn L3 §5.8.4 `AuthenticatorTransport`).
public struct SecurityKeyTransport: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The transport's WebAuthn name.
    public var rawValue: String
    /// Creates a transport from its WebAuthn name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// USB.
    public static let usb = SecurityKeyTransport(rawValue: "usb")
    /// NFC (and contact smart-card readers, which speak the same protocol).
    public static let nfc = SecurityKeyTransport(rawValue: "nfc")
    /// Bluetooth Low Energy.
    public static let ble = SecurityKeyTransport(rawValue: "ble")
    /// A smart card in a contact reader.
    public static let smartCard = SecurityKeyTransport(rawValue: "smart-card")
    /// Cross-device (hybrid) transport.
    public static let hybrid = SecurityKeyTransport(rawValue: "hybrid")

    /// The WebAuthn name.
    public var description: String { rawValue }
}

/// A credential the relying party already knows, to exclude or to allow
/// (WebAuthn L3 §5.8.3 `PublicKeyCredentialDescriptor`; AuthenticationServices'
/// `ASAuthorizationSecurityKeyPublicKeyCredentialDescriptor`).
public struct SecurityKeyCredentialDescriptor: Hashable, Sendable {
    /// The credential ID.
    public var credentialID: [UInt8]
    /// How the key holding it may be reached, as the relying party recorded.
    public var transports: [SecurityKeyTransport]

    /// Creates a descriptor.
    public init(credentialID: [UInt8], transports: [SecurityKeyTransport] = []) {
        self.credentialID = credentialID
        self.transports = transports
    }
}

/// Whether the new credential should be discoverable (WebAuthn L3 §5.4.6 `ResidentKeyRequirement`).
public struct ResidentKeyPreference: RawRepresentable, Hashable, Sendable {
    /// The WebAuthn value.
    public var rawValue: String
    /// Creates a preference from its WebAuthn value.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A server-side credential is preferred.
    public static let discouraged = ResidentKeyPreference(rawValue: "discouraged")
    /// A discoverable credential if the key can make one.
    public static let preferred = ResidentKeyPreference(rawValue: "preferred")
    /// A discoverable credential or an error.
    public static let required = ResidentKeyPreference(rawValue: "required")
}

/// Whether the user should be verified with a PIN or built-in UV (WebAuthn L3 §5.8.6
/// `UserVerificationRequirement`).
public struct UserVerificationPreference: RawRepresentable, Hashable, Sendable {
    /// The WebAuthn value.
    public var rawValue: String
    /// Creates a preference from its WebAuthn value.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Never ask for a PIN, unless the key itself refuses to work without one.
    public static let discouraged = UserVerificationPreference(rawValue: "discouraged")
    /// Verify when the key has a PIN or built-in UV configured.
    public static let preferred = UserVerificationPreference(rawValue: "preferred")
    /// Verify, or fail with a sentence saying how to set a PIN.
    public static let required = UserVerificationPreference(rawValue: "required")
}

/// What attestation the relying party wants (WebAuthn L3 §5.4.7 `AttestationConveyancePreference`).
public struct AttestationConveyancePreference: RawRepresentable, Hashable, Sendable {
    /// The WebAuthn value.
    public var rawValue: String
    /// Creates a preference from its WebAuthn value.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// No attestation: the statement is replaced by `none` and the AAGUID zeroed.
    public static let none = AttestationConveyancePreference(rawValue: "none")
    /// The client may anonymize the statement; this library passes it through.
    public static let indirect = AttestationConveyancePreference(rawValue: "indirect")
    /// The key's own statement.
    public static let direct = AttestationConveyancePreference(rawValue: "direct")
    /// Enterprise attestation (CTAP 2.1 §7.1), where the key allows it.
    public static let enterprise = AttestationConveyancePreference(rawValue: "enterprise")
}
