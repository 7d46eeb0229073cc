import CBOR
import CTAP2
import _SecurityKeyInternals

/// One credential of a user as pam-u2f's authorization file lists it: the credential ID (none
/// for a resident credential, written `*`), the public key in libfido2's raw form, its COSE
/// type and the checks the assertion must pass.
public struct PAMCredential: Hashable, Sendable {
    /// pam-u2f's per-credential options (`+presence`, `+pin`, `+verification`).
    public struct Attributes: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// `+presence`: a touch.
        public static let presence = Attributes(rawValue: 1)
        /// `+pin`: the PIN (which is user verification too).
        public static let pin = Attributes(rawValue: 2)
        /// `+verification`: user verification (PIN or built-in).
        public static let verification = Attributes(rawValue: 4)

        /// The attributes field of a line (`+presence+pin`, or empty).
        public var text: String {
            (contains(.presence) ? "+presence" : "") + (contains(.verification) ? "+verification" : "")
                + (contains(.pin) ? "+pin" : "")
        }
    }

    /// The credential ID, or nil for a resident credential (`*`: the key finds it).
    public var credentialID: [UInt8]?
    /// ES256, EdDSA or RS256.
    public var algorithm: COSEAlgorithm
    /// The public key as libfido2 writes it: ES256 x‖y (64 bytes; 65 with the 0x04 prefix is
    /// accepted), EdDSA the 32-byte key, RS256 n‖e (256 + 3 bytes).
    public var publicKey: [UInt8]
    /// The checks an assertion must pass.
    public var attributes: Attributes
    /// Whether the line was pam-u2f's old (U2F) form: a websafe-base64 key handle and a hex point.
    public var isOldFormat: Bool

    /// Creates a credential.
    public init(
        credentialID: [UInt8]?, algorithm: COSEAlgorithm, publicKey: [UInt8], attributes: Attributes,
        isOldFormat: Bool = false
    ) {
        self.credentialID = credentialID
        self.algorithm = algorithm
        self.publicKey = publicKey
        self.attributes = attributes
        self.isOldFormat = isOldFormat
    }

    /// The COSE type names pam-u2f writes, by algorithm.
    public static let typeNames: [(name: String, algorithm: COSEAlgorithm)] = [
        ("es256", .es256), ("eddsa", .edDSA), ("rs256", .rs256),
    ]

    /// The RSA modulus and exponent sizes of libfido2's `rs256_pk_t`.
    static let rsaModulusSize = 256
    static let rsaExponentSize = 3

    /// The public key as a COSE key of `algorithm`, checked to be a valid key.
    public func coseKey() throws(PAMFailure) -> COSEKey {
        var map: CBORMap
        switch algorithm {
        case .es256:
            let point = publicKey.count == 65 && publicKey.first == 0x04 ? Array(publicKey.dropFirst()) : publicKey
            guard point.count == 64 else { throw Self.malformed("an ES256 key is 64 bytes, not \(publicKey.count)") }
            map = [
                COSEKey.Label.keyType: .int(COSEKeyType.ec2.rawValue),
                COSEKey.Label.curve: .int(COSECurve.p256.rawValue),
                COSEKey.Label.x: .byteString(Array(point[0..<32])),
                COSEKey.Label.y: .byteString(Array(point[32..<64])),
            ]
        case .edDSA:
            guard publicKey.count == 32 else { throw Self.malformed("an EdDSA key is 32 bytes, not \(publicKey.count)") }
            map = [
                COSEKey.Label.keyType: .int(COSEKeyType.okp.rawValue),
                COSEKey.Label.curve: .int(COSECurve.ed25519.rawValue),
                COSEKey.Label.x: .byteString(publicKey),
            ]
        case .rs256:
            guard publicKey.count == Self.rsaModulusSize + Self.rsaExponentSize else {
                throw Self.malformed("an RS256 key is 259 bytes, not \(publicKey.count)")
            }
            map = [
                COSEKey.Label.keyType: .int(COSEKeyType.rsa.rawValue),
                COSEKey.Label.modulus: .byteString(Array(publicKey[0..<Self.rsaModulusSize])),
                COSEKey.Label.exponent: .byteString(Array(publicKey[Self.rsaModulusSize...])),
            ]
        default:
            throw Self.malformed("the COSE type \(algorithm) is not one pam-u2f writes")
        }
        map[COSEKey.Label.algorithm] = .int(algorithm.rawValue)
        do throws(CTAP2Error) {
            let key = try COSEKey(map: map)
            _ = try key.publicKey()
            return key
        } catch {
            throw Self.malformed("the public key is not valid: \(error.message)")
        }
    }

    /// The credential in libfido2's raw form, from the COSE key a key returned for it.
    public init(credentialID: [UInt8]?, coseKey: COSEKey, attributes: Attributes) throws(PAMFailure) {
        let bytes = { (label: CBORValue) in coseKey.parameters[label]?.bytesValue ?? [] }
        let algorithm: COSEAlgorithm
        let raw: [UInt8]
        switch (coseKey.keyType, coseKey.algorithm) {
        // The curve too: the raw form has none, and would make a key stated on another curve a
        // P-256 or Ed25519 key.
        case (.ec2, .es256?) where coseKey.curve == .p256:
            (algorithm, raw) = (.es256, bytes(COSEKey.Label.x) + bytes(COSEKey.Label.y))
        case (.okp, .edDSA?) where coseKey.curve == .ed25519: (algorithm, raw) = (.edDSA, bytes(COSEKey.Label.x))
        case (.rsa, .rs256?):
            // libfido2's rs256_pk_t: n and e left-padded to their fixed sizes.
            let n = Array(bytes(COSEKey.Label.modulus).drop(while: { $0 == 0 }))
            let e = Array(bytes(COSEKey.Label.exponent).drop(while: { $0 == 0 }))
            guard n.count <= Self.rsaModulusSize, e.count <= Self.rsaExponentSize else {
                throw Self.malformed("the RSA key is larger than RS256's 2048 bits")
            }
            algorithm = .rs256
            raw =
                [UInt8](repeating: 0, count: Self.rsaModulusSize - n.count) + n
                + [UInt8](repeating: 0, count: Self.rsaExponentSize - e.count) + e
        default:
            let curve = coseKey.curve.map { " on \($0)" } ?? ""
            let algorithm = coseKey.algorithm.map { "\($0)" } ?? "no algorithm"
            throw Self.malformed("a \(coseKey.keyType) key\(curve) with \(algorithm) is not one pam-u2f reads")
        }
        self.init(credentialID: credentialID, algorithm: algorithm, publicKey: raw, attributes: attributes)
        _ = try self.coseKey()
    }

    /// The credential as pam-u2f's new-style line writes it: `KEYHANDLE,PUBLICKEY,TYPE,ATTRIBUTES`
    /// (standard base64; `*` for a resident credential).
    public var entry: String {
        let handle = credentialID.map { Base64.encode($0) } ?? "*"
        let type = Self.typeNames.first { $0.algorithm == algorithm }?.name ?? "es256"
        return "\(handle),\(Base64.encode(publicKey)),\(type),\(attributes.text)"
    }

    static func malformed(_ why: String) -> PAMFailure {
        PAMFailure(.authInfoUnavailable, why)
    }
}
