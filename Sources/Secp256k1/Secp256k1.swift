import CLibCrypto

/// ECDSA on secp256k1 with SHA-256 (COSE ES256K, RFC 8812 §3.2), done by OpenSSL's libcrypto:
/// swift-crypto's BoringSSL does not carry the curve. Only this module imports `CLibCrypto`.
public enum Secp256k1 {
    /// The length of a private scalar and of one coordinate.
    public static let scalarLength = 32

    /// A secp256k1 public key: a point on the curve, never the point at infinity.
    public struct PublicKey: Hashable, Sendable {
        /// The uncompressed point `04 ‖ x ‖ y` (SEC 1 §2.3.3), 65 bytes.
        public let x963Representation: [UInt8]

        /// Parses an uncompressed point, refusing one that is not on the curve.
        public init(x963Representation point: [UInt8]) throws(Secp256k1Error) {
            guard point.count == 1 + 2 * scalarLength, point.first == 0x04 else {
                throw Secp256k1Error(.invalidKey, "A secp256k1 public key is an uncompressed 65-byte point.")
            }
            let c = try LibCrypto.api()
            try Curve.withGroup { (group) throws(Secp256k1Error) in
                guard let p = c.EC_POINT_new?(group) else { throw Secp256k1Error(.library, "EC_POINT_new failed.") }
                defer { c.EC_POINT_free?(p) }
                guard c.EC_POINT_oct2point?(group, p, point, point.count, nil) == 1 else {
                    throw Secp256k1Error(.invalidKey, "The secp256k1 public key is not a point on the curve.")
                }
            }
            x963Representation = point
        }

        /// The x coordinate.
        public var x: [UInt8] { Array(x963Representation[1...scalarLength]) }
        /// The y coordinate.
        public var y: [UInt8] { Array(x963Representation[(1 + scalarLength)...]) }

        /// The DER SubjectPublicKeyInfo: id-ecPublicKey with the secp256k1 curve (RFC 5480 §2).
        public var derRepresentation: [UInt8] {
            // SEQUENCE { SEQUENCE { 1.2.840.10045.2.1, 1.3.132.0.10 }, BIT STRING (0 unused) point }.
            [
                0x30, 0x56, 0x30, 0x10, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x05, 0x2B,
                0x81, 0x04, 0x00, 0x0A, 0x03, 0x42, 0x00,
            ] + x963Representation
        }

        /// Whether `signature` (DER ECDSA-Sig-Value) is valid over SHA-256 of `message`.
        public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
            guard let c = try? LibCrypto.api() else { return false }
            guard let key = try? Curve.makeKey(publicPoint: x963Representation, scalar: nil) else { return false }
            defer { c.EVP_PKEY_free?(key) }
            guard let context = c.EVP_MD_CTX_new?() else { return false }
            defer { c.EVP_MD_CTX_free?(context) }
            guard c.EVP_DigestVerifyInit?(context, nil, c.EVP_sha256?(), nil, key) == 1 else { return false }
            return c.EVP_DigestVerify?(context, signature, signature.count, message, message.count) == 1
        }
    }

    /// A secp256k1 private key.
    public struct PrivateKey: Sendable {
        private let scalar: [UInt8]
        /// The matching public key.
        public let publicKey: PublicKey

        /// Makes the key for a 32-byte big-endian scalar, which must lie in [1, n − 1].
        public init(rawRepresentation scalar: [UInt8]) throws(Secp256k1Error) {
            guard scalar.count == scalarLength else {
                throw Secp256k1Error(.invalidKey, "A secp256k1 private key is 32 bytes.")
            }
            let c = try LibCrypto.api()
            let point = try Curve.withGroup { (group) throws(Secp256k1Error) -> [UInt8] in
                guard let d = c.BN_bin2bn?(scalar, Int32(scalar.count), nil) else {
                    throw Secp256k1Error(.library, "BN_bin2bn failed.")
                }
                defer { c.BN_clear_free?(d) }
                guard c.BN_is_zero?(d) == 0, let order = c.EC_GROUP_get0_order?(group), (c.BN_cmp?(d, order) ?? 0) < 0 else {
                    throw Secp256k1Error(.invalidKey, "The secp256k1 private scalar is outside [1, n − 1].")
                }
                guard let q = c.EC_POINT_new?(group) else { throw Secp256k1Error(.library, "EC_POINT_new failed.") }
                defer { c.EC_POINT_free?(q) }
                var out = [UInt8](repeating: 0, count: 1 + 2 * scalarLength)
                guard c.EC_POINT_mul?(group, q, d, nil, nil, nil) == 1,
                    c.EC_POINT_point2oct?(group, q, POINT_CONVERSION_UNCOMPRESSED, &out, out.count, nil) == out.count
                else { throw Secp256k1Error(.library, "Computing the secp256k1 public key failed.") }
                return out
            }
            self.scalar = scalar
            publicKey = try PublicKey(x963Representation: point)
        }

        /// The private scalar, 32 bytes big-endian.
        public var rawRepresentation: [UInt8] { scalar }

        /// An ECDSA signature over SHA-256 of `message`, DER-encoded (RFC 8812 §3.2 as WebAuthn uses it).
        public func signature(for message: [UInt8]) throws(Secp256k1Error) -> [UInt8] {
            let c = try LibCrypto.api()
            let key = try Curve.makeKey(publicPoint: publicKey.x963Representation, scalar: scalar)
            defer { c.EVP_PKEY_free?(key) }
            guard let context = c.EVP_MD_CTX_new?() else { throw Secp256k1Error(.library, "EVP_MD_CTX_new failed.") }
            defer { c.EVP_MD_CTX_free?(context) }
            // A DER ECDSA-Sig-Value on a 256-bit curve is at most 72 bytes.
            var signature = [UInt8](repeating: 0, count: 80)
            var length = signature.count
            guard c.EVP_DigestSignInit?(context, nil, c.EVP_sha256?(), nil, key) == 1,
                c.EVP_DigestSign?(context, &signature, &length, message, message.count) == 1,
                length <= signature.count
            else { throw Secp256k1Error(.library, "Signing with the secp256k1 key failed.") }
            return Array(signature[0..<length])
        }
    }

    /// The curve's group and EVP keys made from raw values.
    private enum Curve {
        static func withGroup<T>(
            _ body: (OpaquePointer) throws(Secp256k1Error) -> T
        ) throws(Secp256k1Error) -> T {
            let c = try LibCrypto.api()
            guard let group = c.EC_GROUP_new_by_curve_name?(NID_secp256k1) else {
                throw Secp256k1Error(.library, "libcrypto does not know secp256k1.")
            }
            defer { c.EC_GROUP_free?(group) }
            return try body(group)
        }

        /// An EVP key on secp256k1 from its public point and, for signing, its scalar.
        static func makeKey(publicPoint: [UInt8], scalar: [UInt8]?) throws(Secp256k1Error) -> OpaquePointer {
            let c = try LibCrypto.api()
            guard let builder = c.OSSL_PARAM_BLD_new?() else {
                throw Secp256k1Error(.library, "OSSL_PARAM_BLD_new failed.")
            }
            defer { c.OSSL_PARAM_BLD_free?(builder) }
            var d: OpaquePointer?
            defer { if let d { c.BN_clear_free?(d) } }
            if let scalar {
                d = c.BN_bin2bn?(scalar, Int32(scalar.count), nil)
                guard let d, c.OSSL_PARAM_BLD_push_BN?(builder, CLibCrypto_PARAM_PRIV_KEY, d) == 1 else {
                    throw Secp256k1Error(.library, "Passing the secp256k1 scalar to libcrypto failed.")
                }
            }
            // The builder reads the point when it makes the parameters, which copy it.
            let made = publicPoint.withUnsafeBufferPointer { point -> UnsafeMutablePointer<OSSL_PARAM>? in
                guard
                    c.OSSL_PARAM_BLD_push_utf8_string?(
                        builder, CLibCrypto_PARAM_GROUP_NAME, CLibCrypto_GROUP_SECP256K1, 0) == 1,
                    c.OSSL_PARAM_BLD_push_octet_string?(builder, CLibCrypto_PARAM_PUB_KEY, point.baseAddress, point.count)
                        == 1
                else { return nil }
                return c.OSSL_PARAM_BLD_to_param?(builder)
            }
            guard let parameters = made else {
                throw Secp256k1Error(.library, "Building the secp256k1 key parameters failed.")
            }
            defer { c.OSSL_PARAM_free?(parameters) }
            guard let context = c.EVP_PKEY_CTX_new_from_name?(nil, "EC", nil) else {
                throw Secp256k1Error(.library, "EVP_PKEY_CTX_new_from_name failed.")
            }
            defer { c.EVP_PKEY_CTX_free?(context) }
            var key: OpaquePointer?
            let selection = scalar == nil ? CLibCrypto_EVP_PKEY_PUBLIC_KEY : CLibCrypto_EVP_PKEY_KEYPAIR
            guard c.EVP_PKEY_fromdata_init?(context) == 1,
                c.EVP_PKEY_fromdata?(context, &key, selection, parameters) == 1, let key
            else { throw Secp256k1Error(.invalidKey, "libcrypto refused the secp256k1 key.") }
            return key
        }
    }
}

/// libcrypto's functions, loaded with `dlopen` the first time a secp256k1 key is used (CLibCrypto's
/// shim says why it is not linked).
private enum LibCrypto {
    private static let loaded: Result<CLibCrypto_API, Secp256k1Error> = {
        var api = CLibCrypto_API()
        guard CLibCrypto_load(&api) == 1 else {
            let reason = CLibCrypto_loadError().map { String(cString: $0) } ?? "libcrypto.so.3 lacks a function"
            return .failure(Secp256k1Error(.library, "OpenSSL's libcrypto, which secp256k1 keys need, could not be loaded: \(reason)."))
        }
        return .success(api)
    }()

    /// The functions, or why they could not be loaded.
    static func api() throws(Secp256k1Error) -> CLibCrypto_API { try loaded.get() }
}

/// What went wrong in ``Secp256k1``.
public struct Secp256k1Error: Error, Hashable, Sendable, CustomStringConvertible {
    /// Stable error codes.
    public struct Code: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A key is malformed, off the curve or out of range.
        public static let invalidKey = Code(rawValue: "invalid-key")
        /// libcrypto failed (out of memory, or it lacks the curve).
        public static let library = Code(rawValue: "crypto-library")
    }

    /// What went wrong.
    public var code: Code
    /// One sentence for the user.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
