import CBOR

/// The authenticatorCredentialManagement response (CTAP 2.1 §6.8, response table): each
/// subcommand fills its own members; deleteCredential and updateUserInformation answer with
/// an empty body.
public struct CredentialManagementResponse: CTAP2Response, Hashable {
    /// The CBOR keys of the response.
    public enum Key {
        /// existingResidentCredentialsCount (0x01).
        public static let existingResidentCredentialsCount: CBORValue = 0x01
        /// maxPossibleRemainingResidentCredentialsCount (0x02).
        public static let maxPossibleRemainingResidentCredentialsCount: CBORValue = 0x02
        /// rp (0x03): a PublicKeyCredentialRpEntity.
        public static let rp: CBORValue = 0x03
        /// rpIDHash (0x04).
        public static let rpIDHash: CBORValue = 0x04
        /// totalRPs (0x05).
        public static let totalRPs: CBORValue = 0x05
        /// user (0x06): a PublicKeyCredentialUserEntity.
        public static let user: CBORValue = 0x06
        /// credentialID (0x07): a PublicKeyCredentialDescriptor.
        public static let credentialID: CBORValue = 0x07
        /// publicKey (0x08): a COSE_Key.
        public static let publicKey: CBORValue = 0x08
        /// totalCredentials (0x09).
        public static let totalCredentials: CBORValue = 0x09
        /// credProtect (0x0A).
        public static let credProtect: CBORValue = 0x0A
        /// largeBlobKey (0x0B).
        public static let largeBlobKey: CBORValue = 0x0B
        /// thirdPartyPayment (0x0C, CTAP 2.2).
        public static let thirdPartyPayment: CBORValue = 0x0C
    }

    /// How many discoverable credentials the key holds (getCredsMetadata).
    public var existingResidentCredentialsCount: UInt64?
    /// How many more discoverable credentials fit, at most (getCredsMetadata).
    public var maxPossibleRemainingResidentCredentialsCount: UInt64?
    /// The relying party (enumerateRPs).
    public var rp: RelyingPartyEntity?
    /// SHA-256 of the RP ID, 32 bytes (enumerateRPs).
    public var rpIDHash: [UInt8]?
    /// How many relying parties there are (enumerateRPsBegin).
    public var totalRPs: UInt64?
    /// The user the credential belongs to (enumerateCredentials).
    public var user: UserEntity?
    /// The credential (enumerateCredentials).
    public var credentialID: PublicKeyCredentialDescriptor?
    /// The credential's public key (enumerateCredentials).
    public var publicKey: COSEKey?
    /// How many credentials the relying party has (enumerateCredentialsBegin).
    public var totalCredentials: UInt64?
    /// The credential's credProtect level, 1–3, where the key reports one.
    public var credProtect: UInt64?
    /// The credential's 32-byte largeBlobKey, where it has one.
    public var largeBlobKey: [UInt8]?
    /// Whether the credential may be used for third-party payment (CTAP 2.2), where reported.
    public var thirdPartyPayment: Bool?

    /// Parses the body of a successful reply; an empty body gives an empty response.
    public init(cbor bytes: [UInt8]) throws(CTAP2Error) {
        if bytes.isEmpty {
            self.init()
            return
        }
        try self.init(map: ResponseDecoding.decodeMap(bytes, what: "credentialManagement response"))
    }

    /// Parses a decoded response map. Every member is type-checked; an rpIDHash or
    /// largeBlobKey of the wrong size is refused.
    public init(map: CBORMap) throws(CTAP2Error) {
        let context = "credentialManagement response"
        let r = FieldReader(map, context)
        existingResidentCredentialsCount = try r.uint(
            Key.existingResidentCredentialsCount, "existingResidentCredentialsCount")
        maxPossibleRemainingResidentCredentialsCount = try r.uint(
            Key.maxPossibleRemainingResidentCredentialsCount, "maxPossibleRemainingResidentCredentialsCount")
        rp = try r.value(Key.rp).map { (value) throws(CTAP2Error) in
            try RelyingPartyEntity(cbor: value, context: context)
        }
        rpIDHash = try r.bytes(Key.rpIDHash, "rpIDHash")
        if let rpIDHash, rpIDHash.count != 32 {
            throw CTAP2Error.malformed("The rpIDHash of the \(context) is \(rpIDHash.count) bytes, not 32.")
        }
        totalRPs = try r.uint(Key.totalRPs, "totalRPs")
        user = try r.value(Key.user).map { (value) throws(CTAP2Error) in
            try UserEntity(cbor: value, context: context)
        }
        credentialID = try r.value(Key.credentialID).map { (value) throws(CTAP2Error) in
            try PublicKeyCredentialDescriptor(cbor: value, context: context)
        }
        publicKey = try r.subMap(Key.publicKey, "publicKey").map { (m) throws(CTAP2Error) in
            try COSEKey(map: m)
        }
        totalCredentials = try r.uint(Key.totalCredentials, "totalCredentials")
        credProtect = try r.uint(Key.credProtect, "credProtect")
        largeBlobKey = try r.bytes(Key.largeBlobKey, "largeBlobKey")
        if let largeBlobKey, largeBlobKey.count != 32 {
            throw CTAP2Error.malformed(
                "The largeBlobKey of the \(context) is \(largeBlobKey.count) bytes, not 32.")
        }
        thirdPartyPayment = try r.bool(Key.thirdPartyPayment, "thirdPartyPayment")
    }

    private init() {}
}

extension RelyingPartyEntity {
    /// Parses a PublicKeyCredentialRpEntity an authenticator returned.
    init(cbor value: CBORValue, context: String) throws(CTAP2Error) {
        guard let map = value.mapValue else {
            throw CTAP2Error.malformed("The relying party in the \(context) is not a map.")
        }
        let r = FieldReader(map, "relying party of the \(context)")
        guard let id = try r.text("id", "id") else { throw r.missing("id") }
        self.init(id: id, name: try r.text("name", "name"))
    }
}
