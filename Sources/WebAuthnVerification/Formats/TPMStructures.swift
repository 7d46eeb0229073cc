/// A bounded big-endian reader over untrusted bytes: every read checks the remaining length
/// first and throws ``WebAuthnVerificationError/Code/malformedInput`` instead of trapping.
struct BoundedReader {
    private let bytes: [UInt8]
    private(set) var offset = 0
    /// What is being read, for messages ("TPMS_ATTEST").
    let context: String

    init(_ bytes: [UInt8], _ context: String) {
        self.bytes = bytes
        self.context = context
    }

    var remaining: Int { bytes.count - offset }

    func truncated(_ field: String) -> WebAuthnVerificationError {
        WebAuthnVerificationError(
            .malformedInput, "The \(context) ends inside its \(field) field (\(bytes.count) bytes).")
    }

    mutating func take(_ count: Int, _ field: String) throws(WebAuthnVerificationError) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw truncated(field) }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func uint16(_ field: String) throws(WebAuthnVerificationError) -> UInt16 {
        let b = try take(2, field)
        return UInt16(b[0]) << 8 | UInt16(b[1])
    }

    mutating func uint32(_ field: String) throws(WebAuthnVerificationError) -> UInt32 {
        let b = try take(4, field)
        return b.reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func uint64(_ field: String) throws(WebAuthnVerificationError) -> UInt64 {
        let b = try take(8, field)
        return b.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A TPM2B_*: a 16-bit size, then that many bytes.
    mutating func sized(_ field: String) throws(WebAuthnVerificationError) -> [UInt8] {
        let size = try uint16(field + " size")
        return try take(Int(size), field)
    }

    func requireEnd() throws(WebAuthnVerificationError) {
        guard remaining == 0 else {
            throw WebAuthnVerificationError(
                .malformedInput, "The \(context) has \(remaining) bytes after its last field.")
        }
    }
}

/// A TPM algorithm identifier (TPM 2.0 Part 2 §6.3 TPM_ALG_ID).
public struct TPMAlgorithm: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The 16-bit identifier.
    public var rawValue: UInt16
    /// Creates an algorithm from its identifier.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// TPM_ALG_RSA.
    public static let rsa = TPMAlgorithm(rawValue: 0x0001)
    /// TPM_ALG_SHA1.
    public static let sha1 = TPMAlgorithm(rawValue: 0x0004)
    /// TPM_ALG_NULL.
    public static let null = TPMAlgorithm(rawValue: 0x0010)
    /// TPM_ALG_SHA256.
    public static let sha256 = TPMAlgorithm(rawValue: 0x000B)
    /// TPM_ALG_SHA384.
    public static let sha384 = TPMAlgorithm(rawValue: 0x000C)
    /// TPM_ALG_SHA512.
    public static let sha512 = TPMAlgorithm(rawValue: 0x000D)
    /// TPM_ALG_ECC.
    public static let ecc = TPMAlgorithm(rawValue: 0x0023)

    public var description: String { "0x" + String(rawValue, radix: 16) }
}

/// A TPM elliptic curve identifier (TPM 2.0 Part 2 §6.4 TPM_ECC_CURVE).
public struct TPMECCCurve: RawRepresentable, Hashable, Sendable {
    /// The 16-bit identifier.
    public var rawValue: UInt16
    /// Creates a curve from its identifier.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// TPM_ECC_NIST_P256.
    public static let nistP256 = TPMECCCurve(rawValue: 0x0003)
    /// TPM_ECC_NIST_P384.
    public static let nistP384 = TPMECCCurve(rawValue: 0x0004)
    /// TPM_ECC_NIST_P521.
    public static let nistP521 = TPMECCCurve(rawValue: 0x0005)
}

/// TPMT_PUBLIC (TPM 2.0 Part 2 §12.2.4): the public area of the credential key, as the TPM
/// describes it in a tpm attestation statement's `pubArea` (WebAuthn §8.3).
public struct TPMTPublic: Hashable, Sendable {
    /// The key's parameters and unique value, by key type.
    public enum Key: Hashable, Sendable {
        /// An RSA key: its exponent (0 means 65537) and modulus.
        case rsa(exponent: UInt32, modulus: [UInt8])
        /// An ECC key: its curve and point.
        case ecc(curve: TPMECCCurve, x: [UInt8], y: [UInt8])
    }

    /// The key type (TPM_ALG_RSA or TPM_ALG_ECC).
    public var type: TPMAlgorithm
    /// The hash algorithm the key's name is computed with.
    public var nameAlgorithm: TPMAlgorithm
    /// TPMA_OBJECT.
    public var objectAttributes: UInt32
    /// The key.
    public var key: Key

    /// Parses a TPMT_PUBLIC, refusing truncated, oversized or trailing bytes.
    public init(bytes: [UInt8]) throws(WebAuthnVerificationError) {
        var r = BoundedReader(bytes, "TPMT_PUBLIC")
        type = TPMAlgorithm(rawValue: try r.uint16("type"))
        nameAlgorithm = TPMAlgorithm(rawValue: try r.uint16("nameAlg"))
        objectAttributes = try r.uint32("objectAttributes")
        _ = try r.sized("authPolicy")
        // TPMT_SYM_DEF_OBJECT: keyBits and mode follow only a non-null algorithm.
        if TPMAlgorithm(rawValue: try r.uint16("symmetric")) != .null {
            _ = try r.take(4, "symmetric keyBits and mode")
        }
        // TPMT_RSA_SCHEME / TPMT_ECC_SCHEME: a hash algorithm follows a non-null scheme.
        if TPMAlgorithm(rawValue: try r.uint16("scheme")) != .null {
            _ = try r.uint16("scheme hashAlg")
        }
        switch type {
        case .rsa:
            _ = try r.uint16("keyBits")
            let exponent = try r.uint32("exponent")
            let modulus = try r.sized("unique")
            key = .rsa(exponent: exponent, modulus: modulus)
        case .ecc:
            let curve = TPMECCCurve(rawValue: try r.uint16("curveID"))
            if TPMAlgorithm(rawValue: try r.uint16("kdf")) != .null {
                _ = try r.uint16("kdf hashAlg")
            }
            let x = try r.sized("unique x")
            let y = try r.sized("unique y")
            key = .ecc(curve: curve, x: x, y: y)
        default:
            throw WebAuthnVerificationError(
                .unsupportedAlgorithm, "The TPM public area's key type \(type) is neither RSA nor ECC.")
        }
        try r.requireEnd()
    }
}

/// TPMS_ATTEST (TPM 2.0 Part 2 §10.12.8) of type TPM_ST_ATTEST_CERTIFY: what a tpm attestation
/// statement's `certInfo` holds and its `sig` signs (WebAuthn §8.3).
public struct TPMSAttest: Hashable, Sendable {
    /// TPM_GENERATED_VALUE: the structure was made by a TPM.
    public static let generatedValue: UInt32 = 0xff54_4347
    /// TPM_ST_ATTEST_CERTIFY.
    public static let attestCertify: UInt16 = 0x8017

    /// The magic value (must be ``generatedValue``).
    public var magic: UInt32
    /// The structure tag (must be ``attestCertify``).
    public var type: UInt16
    /// The qualified name of the signing key.
    public var qualifiedSigner: [UInt8]
    /// The caller's data: the hash of attToBeSigned.
    public var extraData: [UInt8]
    /// The TPM's clock, reset and restart counts, and safe flag (TPMS_CLOCK_INFO).
    public var clock: UInt64
    /// The firmware version.
    public var firmwareVersion: UInt64
    /// TPMS_CERTIFY_INFO.name: the certified key's name (nameAlg ‖ digest of pubArea).
    public var attestedName: [UInt8]
    /// TPMS_CERTIFY_INFO.qualifiedName.
    public var attestedQualifiedName: [UInt8]

    /// Parses a TPMS_ATTEST, refusing truncated or trailing bytes. The magic and type are read,
    /// not judged: the verifier checks them.
    public init(bytes: [UInt8]) throws(WebAuthnVerificationError) {
        var r = BoundedReader(bytes, "TPMS_ATTEST")
        magic = try r.uint32("magic")
        type = try r.uint16("type")
        qualifiedSigner = try r.sized("qualifiedSigner")
        extraData = try r.sized("extraData")
        clock = try r.uint64("clock")
        _ = try r.take(9, "resetCount, restartCount and safe")
        firmwareVersion = try r.uint64("firmwareVersion")
        guard type == Self.attestCertify else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The TPM attestation is not of type TPM_ST_ATTEST_CERTIFY.")
        }
        attestedName = try r.sized("attested name")
        attestedQualifiedName = try r.sized("attested qualifiedName")
        try r.requireEnd()
    }
}
