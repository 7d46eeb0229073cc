import CBOR

/// A COSE key type (RFC 9052 §7, IANA "COSE Key Types").
public struct COSEKeyType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The registered integer.
    public var rawValue: Int
    /// Creates a key type from its registered integer.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Octet key pair (Ed25519, Ed448, X25519, X448).
    public static let okp = COSEKeyType(rawValue: 1)
    /// Elliptic curve key with x and y coordinates.
    public static let ec2 = COSEKeyType(rawValue: 2)
    /// RSA key.
    public static let rsa = COSEKeyType(rawValue: 3)
    /// Symmetric key.
    public static let symmetric = COSEKeyType(rawValue: 4)
    /// Algorithm Key Pair: a key whose algorithm fixes its form, such as ML-DSA (draft-ietf-cose-dilithium §6).
    public static let akp = COSEKeyType(rawValue: 7)

    public var description: String {
        switch self {
        case .okp: "OKP"
        case .ec2: "EC2"
        case .rsa: "RSA"
        case .symmetric: "Symmetric"
        case .akp: "AKP"
        default: "kty(\(rawValue))"
        }
    }
}

/// A COSE elliptic curve (RFC 9053 §7.1, IANA "COSE Elliptic Curves").
public struct COSECurve: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The registered integer.
    public var rawValue: Int
    /// Creates a curve from its registered integer.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// NIST P-256.
    public static let p256 = COSECurve(rawValue: 1)
    /// NIST P-384.
    public static let p384 = COSECurve(rawValue: 2)
    /// NIST P-521.
    public static let p521 = COSECurve(rawValue: 3)
    /// X25519 (key agreement).
    public static let x25519 = COSECurve(rawValue: 4)
    /// X448 (key agreement).
    public static let x448 = COSECurve(rawValue: 5)
    /// Ed25519 (signatures).
    public static let ed25519 = COSECurve(rawValue: 6)
    /// Ed448 (signatures).
    public static let ed448 = COSECurve(rawValue: 7)
    /// SECG secp256k1 (RFC 8812 §3.1).
    public static let secp256k1 = COSECurve(rawValue: 8)

    /// The size in bytes of one coordinate, for curves this library reads.
    var coordinateSize: Int? {
        switch self {
        case .p256, .x25519, .ed25519, .secp256k1: 32
        case .p384: 48
        case .p521: 66
        case .x448: 56
        case .ed448: 57
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .p256: "P-256"
        case .p384: "P-384"
        case .p521: "P-521"
        case .x25519: "X25519"
        case .x448: "X448"
        case .ed25519: "Ed25519"
        case .ed448: "Ed448"
        case .secp256k1: "secp256k1"
        default: "crv(\(rawValue))"
        }
    }
}

/// A public key in COSE_Key form (RFC 9052 §7; WebAuthn §6.5.1.1 credentialPublicKey).
///
/// The whole map is kept in ``parameters`` so nothing the authenticator sent is lost;
/// ``publicKey()`` turns the key into a swift-crypto key for verification and export.
public struct COSEKey: Hashable, Sendable {
    /// COSE_Key labels (RFC 9052 §7.1, RFC 9053 §7).
    public enum Label {
        /// kty (1).
        public static let keyType: CBORValue = 1
        /// alg (3).
        public static let algorithm: CBORValue = 3
        /// crv (-1) for EC2 and OKP keys.
        public static let curve: CBORValue = -1
        /// x (-2) for EC2 and OKP keys.
        public static let x: CBORValue = -2
        /// y (-3) for EC2 keys.
        public static let y: CBORValue = -3
        /// n (-1) for RSA keys.
        public static let modulus: CBORValue = -1
        /// e (-2) for RSA keys.
        public static let exponent: CBORValue = -2
        /// pub (-1) for AKP keys (draft-ietf-cose-dilithium §6).
        public static let akpPublic: CBORValue = -1
    }

    /// The key type.
    public var keyType: COSEKeyType
    /// The algorithm the key is restricted to, where stated.
    public var algorithm: COSEAlgorithm?
    /// Every label of the key, as decoded.
    public var parameters: CBORMap

    /// Parses a COSE_Key map.
    public init(map: CBORMap) throws(CTAP2Error) {
        let r = FieldReader(map, "COSE key")
        guard let kty = try r.int(Label.keyType, "kty") else { throw r.missing("kty") }
        keyType = COSEKeyType(rawValue: kty)
        algorithm = try r.int(Label.algorithm, "alg").map { COSEAlgorithm(rawValue: $0) }
        parameters = map
    }

    /// Parses an encoded COSE_Key.
    public init(cbor bytes: [UInt8]) throws(CTAP2Error) {
        try self.init(map: ResponseDecoding.decodeMap(bytes, what: "COSE key"))
    }

    /// The key's canonical CBOR encoding.
    public var cborEncoded: [UInt8] { CBOREncoder.encode(.map(parameters)) }

    /// The curve of an EC2 or OKP key.
    public var curve: COSECurve? {
        guard keyType == .ec2 || keyType == .okp, let c = parameters[Label.curve]?.intValue else {
            return nil
        }
        return COSECurve(rawValue: c)
    }

    private func field(_ label: CBORValue, _ name: String) throws(CTAP2Error) -> [UInt8] {
        guard let v = parameters[label] else {
            throw CTAP2Error.malformed("The \(keyType) COSE key lacks its \(name) parameter.")
        }
        guard let b = v.bytesValue else {
            throw CTAP2Error.malformed("The \(name) parameter of the COSE key is not a byte string.")
        }
        return b
    }

    private func coordinate(_ label: CBORValue, _ name: String, size: Int) throws(CTAP2Error) -> [UInt8] {
        let b = try field(label, name)
        guard b.count == size else {
            throw CTAP2Error.malformed(
                "The \(name) coordinate of the COSE key is \(b.count) bytes, not \(size).")
        }
        return b
    }

    /// The key as a swift-crypto public key.
    public func publicKey() throws(CTAP2Error) -> SignaturePublicKey {
        switch keyType {
        case .ec2:
            guard let curve else { throw CTAP2Error.malformed("The EC2 COSE key lacks a valid curve.") }
            guard let size = curve.coordinateSize, [COSECurve.p256, .p384, .p521, .secp256k1].contains(curve) else {
                throw CTAP2Error(.unsupportedAlgorithm, "EC2 keys on curve \(curve) are not supported.")
            }
            let point =
                [0x04] + (try coordinate(Label.x, "x", size: size))
                + (try coordinate(Label.y, "y", size: size))
            return try SignaturePublicKey(x963: point, curve: curve)
        case .okp:
            guard let curve else { throw CTAP2Error.malformed("The OKP COSE key lacks a valid curve.") }
            guard curve == .ed25519 else {
                throw CTAP2Error(.unsupportedAlgorithm, "OKP keys on curve \(curve) are not supported.")
            }
            return try SignaturePublicKey(ed25519: coordinate(Label.x, "x", size: 32))
        case .rsa:
            return try SignaturePublicKey(
                rsaModulus: field(Label.modulus, "n"), exponent: field(Label.exponent, "e"))
        case .akp:
            // The algorithm fixes the key's form; only ML-DSA is read here.
            guard let algorithm, [COSEAlgorithm.mlDSA65, .mlDSA87].contains(algorithm) else {
                throw CTAP2Error(
                    .unsupportedAlgorithm,
                    "AKP keys for \(algorithm.map { "\($0)" } ?? "no stated algorithm") are not supported.")
            }
            return try SignaturePublicKey(mlDSA: field(Label.akpPublic, "pub"), algorithm: algorithm)
        default:
            throw CTAP2Error(.unsupportedAlgorithm, "COSE keys of type \(keyType) are not supported.")
        }
    }
}
