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

    /// The algorithms this implementation can create keys for.
    public static let implemented: [COSEAlgorithm] = [.es256, .edDSA, .es384]

    public var description: String {
        switch self {
        case .es256: "ES256"
        case .edDSA: "EdDSA"
        case .es384: "ES384"
        default: "COSE algorithm \(rawValue)"
        }
    }
}
