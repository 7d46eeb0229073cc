/// A COSE algorithm identifier (RFC 9053, IANA "COSE Algorithms"; CTAP 2.1 §6.1 pubKeyCredParams).
public struct COSEAlgorithm: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// ECDSA with SHA-256 on P-256.
    public static let es256 = COSEAlgorithm(rawValue: -7)
    /// EdDSA (Ed25519 here).
    public static let edDSA = COSEAlgorithm(rawValue: -8)
    /// ECDSA with SHA-384 on P-384.
    public static let es384 = COSEAlgorithm(rawValue: -35)
    /// ECDSA with SHA-512 on P-521.
    public static let es512 = COSEAlgorithm(rawValue: -36)
    /// ECDSA with SHA-256 on secp256k1 (RFC 8812 §3.2).
    public static let es256K = COSEAlgorithm(rawValue: -47)
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8812 §2), 2048-bit keys here.
    public static let rs256 = COSEAlgorithm(rawValue: -257)
    /// RSASSA-PSS with SHA-256, MGF1 with SHA-256 and a 32-byte salt (RFC 8230 §2), 2048-bit keys here.
    public static let ps256 = COSEAlgorithm(rawValue: -37)
    /// ML-DSA-65 (FIPS 204; draft-ietf-cose-dilithium), pure mode with an empty context.
    public static let mlDSA65 = COSEAlgorithm(rawValue: -49)
    /// ML-DSA-87 (FIPS 204; draft-ietf-cose-dilithium), pure mode with an empty context.
    public static let mlDSA87 = COSEAlgorithm(rawValue: -50)

    /// The algorithms this implementation can create keys for, in the order a key offers them by
    /// default: ES256 (what every platform asks for) first, then the other elliptic curves, RSA,
    /// and the post-quantum ML-DSA last.
    public static let implemented: [COSEAlgorithm] = [
        .es256, .edDSA, .es384, .es512, .es256K, .rs256, .ps256, .mlDSA65, .mlDSA87,
    ]

    /// What a key offers unless told otherwise: every implemented algorithm but ML-DSA, whose
    /// replies (up to 7.4 kB) do not fit the default maxMsgSize of 1200 bytes, which hosts may
    /// hold replies to (``needsLargeMessages``).
    public static let offeredByDefault: [COSEAlgorithm] = implemented.filter { !$0.needsLargeMessages }

    /// The maxMsgSize a key offering an algorithm that ``needsLargeMessages`` reports: CTAPHID's
    /// largest message, 64 − 7 + 128 × (64 − 5) bytes (CTAP 2.1 §11.2.4).
    public static let largeMessageSize = 7609

    /// Whether replies with this algorithm's keys and signatures outgrow a 1200-byte maxMsgSize:
    /// an ML-DSA-87 self-attested registration is about 7.4 kB, an ML-DSA-65 one 5.4 kB.
    public var needsLargeMessages: Bool { self == .mlDSA65 || self == .mlDSA87 }

    /// The algorithm a name or a COSE number states: es256, eddsa, es384, es512, es256k, rs256,
    /// ps256, mldsa65, mldsa87 (any case), or an integer such as -257; nil for anything else.
    public init?(name: String) {
        if let number = Int(name) {
            self.init(rawValue: number)
            return
        }
        guard let found = Self.implemented.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = found
    }

    /// The lower-case name ``init(name:)`` reads.
    public var name: String {
        String(description.lowercased().filter { $0 != "-" })
    }

    public var description: String {
        switch self {
        case .es256: "ES256"
        case .edDSA: "EdDSA"
        case .es384: "ES384"
        case .es512: "ES512"
        case .es256K: "ES256K"
        case .rs256: "RS256"
        case .ps256: "PS256"
        case .mlDSA65: "ML-DSA-65"
        case .mlDSA87: "ML-DSA-87"
        default: "COSE algorithm \(rawValue)"
        }
    }
}
