import _SecurityKeyInternals
import CBOR

/// A COSE algorithm identifier (IANA "COSE Algorithms" registry; WebAuthn §5.8.5).
public struct COSEAlgorithm: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The registered integer.
    public var rawValue: Int
    /// Creates an algorithm from its registered integer.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// ECDSA with SHA-256 (on P-256 in WebAuthn).
    public static let es256 = COSEAlgorithm(rawValue: -7)
    /// EdDSA (Ed25519 in WebAuthn).
    public static let edDSA = COSEAlgorithm(rawValue: -8)
    /// ECDSA on P-256 with SHA-256, fully specified (RFC 9864).
    public static let esp256 = COSEAlgorithm(rawValue: -9)
    /// Ed25519, fully specified (RFC 9864).
    public static let ed25519 = COSEAlgorithm(rawValue: -19)
    /// ECDSA with SHA-384 (on P-384 in WebAuthn).
    public static let es384 = COSEAlgorithm(rawValue: -35)
    /// ECDSA with SHA-512 (on P-521 in WebAuthn).
    public static let es512 = COSEAlgorithm(rawValue: -36)
    /// RSASSA-PSS with SHA-256.
    public static let ps256 = COSEAlgorithm(rawValue: -37)
    /// ECDSA with SHA-256 on secp256k1 (RFC 8812 §3.2).
    public static let es256K = COSEAlgorithm(rawValue: -47)
    /// ML-DSA-65 (FIPS 204, pure, empty context; draft-ietf-cose-dilithium).
    public static let mlDSA65 = COSEAlgorithm(rawValue: -49)
    /// ML-DSA-87 (FIPS 204, pure, empty context; draft-ietf-cose-dilithium).
    public static let mlDSA87 = COSEAlgorithm(rawValue: -50)
    /// ECDSA on P-384 with SHA-384, fully specified (RFC 9864).
    public static let esp384 = COSEAlgorithm(rawValue: -51)
    /// ECDSA on P-521 with SHA-512, fully specified (RFC 9864).
    public static let esp512 = COSEAlgorithm(rawValue: -52)
    /// Ed448, fully specified (RFC 9864).
    public static let ed448 = COSEAlgorithm(rawValue: -53)
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    public static let rs256 = COSEAlgorithm(rawValue: -257)
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    public static let rs384 = COSEAlgorithm(rawValue: -258)
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    public static let rs512 = COSEAlgorithm(rawValue: -259)
    /// RSASSA-PKCS1-v1_5 with SHA-1 (Windows Hello TPM attestation only).
    public static let rs1 = COSEAlgorithm(rawValue: -65535)

    public var description: String {
        switch self {
        case .es256: "ES256"
        case .edDSA: "EdDSA"
        case .esp256: "ESP256"
        case .ed25519: "Ed25519"
        case .es384: "ES384"
        case .es512: "ES512"
        case .ps256: "PS256"
        case .es256K: "ES256K"
        case .mlDSA65: "ML-DSA-65"
        case .mlDSA87: "ML-DSA-87"
        case .esp384: "ESP384"
        case .esp512: "ESP512"
        case .ed448: "Ed448"
        case .rs256: "RS256"
        case .rs384: "RS384"
        case .rs512: "RS512"
        case .rs1: "RS1"
        default: "COSE(\(rawValue))"
        }
    }

    /// The algorithm a name or a COSE number states: es256, es384, es512, eddsa, ed25519, rs256,
    /// ps256, es256k, mldsa65 or ml-dsa-65, mldsa87 or ml-dsa-87 (any case), or an integer
    /// such as -257; nil for anything else.
    public init?(name: String) {
        let named: [String: COSEAlgorithm] = [
            "es256": .es256, "es384": .es384, "es512": .es512, "eddsa": .edDSA, "ed25519": .ed25519, "rs256": .rs256,
            "ps256": .ps256, "es256k": .es256K, "mldsa65": .mlDSA65, "ml-dsa-65": .mlDSA65, "mldsa87": .mlDSA87,
            "ml-dsa-87": .mlDSA87,
        ]
        if let algorithm = named[name.lowercased()] {
            self = algorithm
        } else if let number = Int(name) {
            self.init(rawValue: number)
        } else {
            return nil
        }
    }
}

/// An authenticator attestation GUID (WebAuthn §6.5.1), 16 bytes.
public struct AAGUID: Hashable, Sendable, CustomStringConvertible {
    /// The 16 bytes.
    public let bytes: [UInt8]

    /// The all-zero AAGUID of authenticators that do not disclose their model.
    public static let zero = AAGUID(unchecked: [UInt8](repeating: 0, count: 16))

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// Creates an AAGUID from exactly 16 bytes; nil otherwise.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses the textual UUID form (`01020304-0102-0304-0506-010203040506`).
    public init?(uuidString: String) {
        guard let parsed = Hex.decodeUUID(uuidString) else { return nil }
        self.bytes = parsed
    }

    /// The lowercase UUID form.
    public var description: String { Hex.uuid(bytes) }
}

/// The relying party a credential is scoped to (WebAuthn §5.4.2 PublicKeyCredentialRpEntity).
public struct RelyingPartyEntity: Hashable, Sendable {
    /// The RP ID, a domain such as `example.com`.
    public var id: String
    /// A human-palatable name, where given.
    public var name: String?

    /// Creates an entity.
    public init(id: String, name: String? = nil) {
        self.id = id
        self.name = name
    }

    var cbor: CBORValue {
        var m: CBORMap = ["id": .textString(id)]
        if let name { m["name"] = .textString(name) }
        return .map(m)
    }
}

/// The user account a credential belongs to (WebAuthn §5.4.3 PublicKeyCredentialUserEntity).
public struct UserEntity: Hashable, Sendable {
    /// The user handle, at most 64 bytes.
    public var id: [UInt8]
    /// The account name, where given.
    public var name: String?
    /// The display name, where given.
    public var displayName: String?
    /// The CTAP 2.0 icon URL, where an authenticator returns one.
    public var icon: String?

    /// Creates an entity.
    public init(id: [UInt8], name: String? = nil, displayName: String? = nil, icon: String? = nil) {
        self.id = id
        self.name = name
        self.displayName = displayName
        self.icon = icon
    }

    var cbor: CBORValue {
        var m: CBORMap = ["id": .byteString(id)]
        if let name { m["name"] = .textString(name) }
        if let displayName { m["displayName"] = .textString(displayName) }
        if let icon { m["icon"] = .textString(icon) }
        return .map(m)
    }

    init(cbor value: CBORValue, context: String) throws(CTAP2Error) {
        guard let map = value.mapValue else {
            throw CTAP2Error.malformed("The user in the \(context) is not a map.")
        }
        let r = FieldReader(map, "user entity of the \(context)")
        guard let id = try r.bytes("id", "id") else { throw r.missing("id") }
        self.id = id
        self.name = try r.text("name", "name")
        self.displayName = try r.text("displayName", "displayName")
        self.icon = try r.text("icon", "icon")
    }
}

/// A credential type and algorithm the relying party accepts (WebAuthn §5.3
/// PublicKeyCredentialParameters).
public struct PublicKeyCredentialParameters: Hashable, Sendable {
    /// The credential type; `public-key` is the only one defined.
    public var type: String
    /// The signature algorithm.
    public var algorithm: COSEAlgorithm

    /// Creates parameters.
    public init(type: String = "public-key", algorithm: COSEAlgorithm) {
        self.type = type
        self.algorithm = algorithm
    }

    var cbor: CBORValue { .map(["alg": .int(algorithm.rawValue), "type": .textString(type)]) }

    init(cbor value: CBORValue, context: String) throws(CTAP2Error) {
        guard let map = value.mapValue else {
            throw CTAP2Error.malformed("An algorithm entry in the \(context) is not a map.")
        }
        let r = FieldReader(map, "algorithm entry of the \(context)")
        guard let type = try r.text("type", "type") else { throw r.missing("type") }
        guard let alg = try r.int("alg", "alg") else { throw r.missing("alg") }
        self.type = type
        self.algorithm = COSEAlgorithm(rawValue: alg)
    }
}

/// Names a credential in allow and exclude lists (WebAuthn §5.8.3
/// PublicKeyCredentialDescriptor).
public struct PublicKeyCredentialDescriptor: Hashable, Sendable {
    /// The credential type; `public-key` is the only one defined.
    public var type: String
    /// The credential ID.
    public var id: [UInt8]
    /// Transport hints, where known.
    public var transports: [String]?

    /// Creates a descriptor.
    public init(type: String = "public-key", id: [UInt8], transports: [String]? = nil) {
        self.type = type
        self.id = id
        self.transports = transports
    }

    var cbor: CBORValue {
        var m: CBORMap = ["id": .byteString(id), "type": .textString(type)]
        if let transports { m["transports"] = .array(transports.map { .textString($0) }) }
        return .map(m)
    }

    init(cbor value: CBORValue, context: String) throws(CTAP2Error) {
        guard let map = value.mapValue else {
            throw CTAP2Error.malformed("The credential in the \(context) is not a map.")
        }
        let r = FieldReader(map, "credential descriptor of the \(context)")
        guard let id = try r.bytes("id", "id") else { throw r.missing("id") }
        guard let type = try r.text("type", "type") else { throw r.missing("type") }
        self.id = id
        self.type = type
        self.transports = try r.textArray("transports", "transports")
    }
}
