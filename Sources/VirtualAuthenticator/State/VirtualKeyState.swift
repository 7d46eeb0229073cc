import CBOR

/// Everything a virtual key remembers: identity, secrets, counters and discoverable
/// credentials. Serialized as one CTAP2-canonical CBOR map with a magic string and a format
/// version, so a foreign or newer file is recognised and refused rather than misread.
struct VirtualKeyState: Sendable, Equatable {
    static let magic = "securitykey virtual authenticator state"
    static let formatVersion = 1

    /// The AAGUID, also written into the attestation certificate.
    var aaguid: [UInt8]
    /// The AES-256-GCM key sealing credential IDs; replaced by reset.
    var wrappingKey: [UInt8]
    /// The P-256 attestation private key (raw scalar).
    var attestationKey: [UInt8]
    /// The attestation certificate (DER), issued by the root below.
    var attestationCertificate: [UInt8]
    /// The self-signed root CA certificate (DER) that verifiers trust.
    var rootCertificate: [UInt8]
    /// The global signature counter.
    var signatureCounter: UInt32
    /// Per-credential counters of non-discoverable credentials, by credential ID.
    var credentialCounters: [[UInt8]: UInt32]
    /// Discoverable credentials, oldest first.
    var credentials: [DiscoverableCredential]
    /// Creation order for the next discoverable credential.
    var nextSequence: UInt64
    /// LEFT(SHA-256(PIN), 16), or nil when no PIN is set (CTAP 2.1 §6.5.5.5).
    var pinHash: [UInt8]? = nil
    /// PIN attempts left before the PIN is blocked for good (§6.5.2.2).
    var pinRetries: Int = PINPolicy.maxRetries
    /// Built-in verification attempts left; nil means the configured maximum.
    var uvRetries: Int? = nil
    /// Whether a PIN change is demanded before tokens are issued (§6.4 forcePINChange).
    var forcePINChange = false
    /// The current PIN's length in code points, when known (setMinPINLength compares it).
    var pinLength: Int? = nil
    /// The minimum PIN length set by authenticatorConfig; nil means the configured one.
    var minPINLength: Int? = nil
    /// RP IDs that may read the minimum PIN length (the minPinLength extension, §6.11.4).
    var minPINLengthRPIDs: [String] = []
    /// The alwaysUv setting toggled by authenticatorConfig; nil means the configured one.
    var alwaysUV: Bool? = nil
    /// Whether enterprise attestation was enabled; nil means the configured `ep` value.
    var enterpriseAttestationEnabled: Bool? = nil
    /// The enterprise attestation identity, made once for an enterprise-attestation-capable key.
    var enterpriseAttestation: EnterpriseAttestationIdentity? = nil
    /// Enrolled fingerprint templates of the simulated sensor.
    var fingerprints: [FingerprintTemplateRecord] = []
    /// The serialized large-blob array; nil means the initial empty one (CTAP 2.1 §6.10).
    var largeBlobArray: [UInt8]? = nil
    /// The largeBlobKeys of discoverable credentials, by credential ID (CTAP 2.1 §12.3).
    var largeBlobKeys: [[UInt8]: [UInt8]] = [:]
    /// The private keys of RS256 and PS256 credentials (PKCS #1 DER), by the seed sealed in their
    /// credential ID: an RSA key cannot be derived from a seed (CredentialPrivateKey.swift).
    var storedCredentialKeys: [[UInt8]: [UInt8]] = [:]
    /// The persistentPinUvAuthToken (CTAP 2.2 `pcmr`): kept across power cycles, replaced when
    /// the PIN is set or changed and by reset; nil until a key with the feature first needs it.
    var persistentPINUVAuthToken: [UInt8]? = nil
}

/// The key and certificates that sign enterprise attestations (CTAP 2.1 §7.1).
struct EnterpriseAttestationIdentity: Sendable, Equatable {
    /// The P-256 private key (raw scalar).
    var key: [UInt8]
    /// The enterprise attestation certificate (DER).
    var certificate: [UInt8]
    /// The root CA certificate (DER) that issued it.
    var rootCertificate: [UInt8]
}

/// A stored discoverable credential (CTAP 2.1 §6.1.2 step 17).
struct DiscoverableCredential: Sendable, Equatable {
    var id: [UInt8]
    var rpID: String
    var rpName: String?
    var userID: [UInt8]
    var userName: String?
    var userDisplayName: String?
    var algorithm: COSEAlgorithm
    var seed: [UInt8]
    var signatureCounter: UInt32
    var sequence: UInt64
    /// credProtect, hmac-secret and credBlob (VirtualKey+Extensions.swift).
    var credProtect: CredProtectLevel = .optional
    var credRandoms: CredRandoms? = nil
    var credBlob: [UInt8]? = nil
    /// Made with thirdPartyPayment (CTAP 2.2 §12.9).
    var thirdPartyPayment = false
}

extension VirtualKeyState {
    private enum Field {
        static let magic = "magic"
        static let version = "version"
        static let aaguid = "aaguid"
        static let wrappingKey = "wrappingKey"
        static let attestationKey = "attestationKey"
        static let attestationCertificate = "attestationCertificate"
        static let rootCertificate = "rootCertificate"
        static let signatureCounter = "signatureCounter"
        static let credentialCounters = "credentialCounters"
        static let credentials = "credentials"
        static let nextSequence = "nextSequence"
        // Added with clientPIN; files without them load as keys without a PIN.
        static let pinHash = "pinHash"
        static let pinRetries = "pinRetries"
        static let uvRetries = "uvRetries"
        static let forcePINChange = "forcePINChange"
        // Added with CTAP 2.1 configuration; files without them load with the defaults.
        static let pinLength = "pinLength"
        static let minPINLength = "minPINLength"
        static let minPINLengthRPIDs = "minPINLengthRPIDs"
        static let alwaysUV = "alwaysUv"
        static let enterpriseAttestationEnabled = "epEnabled"
        static let enterpriseAttestationKey = "epKey"
        static let enterpriseAttestationCertificate = "epCertificate"
        static let enterpriseAttestationRootCertificate = "epRootCertificate"
    }

    /// The canonical CBOR encoding written to the state file.
    func encoded() -> [UInt8] {
        var counters = CBORMap()
        for (id, counter) in credentialCounters { counters[.byteString(id)] = .unsigned(UInt64(counter)) }
        var map = CBORMap()
        map[Field.magic] = .textString(Self.magic)
        map[Field.version] = .int(Self.formatVersion)
        map[Field.aaguid] = .byteString(aaguid)
        map[Field.wrappingKey] = .byteString(wrappingKey)
        map[Field.attestationKey] = .byteString(attestationKey)
        map[Field.attestationCertificate] = .byteString(attestationCertificate)
        map[Field.rootCertificate] = .byteString(rootCertificate)
        map[Field.signatureCounter] = .unsigned(UInt64(signatureCounter))
        map[Field.credentialCounters] = .map(counters)
        map[Field.credentials] = .array(credentials.map { .map($0.encoded()) })
        map[Field.nextSequence] = .unsigned(nextSequence)
        if let pinHash { map[Field.pinHash] = .byteString(pinHash) }
        map[Field.pinRetries] = .int(pinRetries)
        if let uvRetries { map[Field.uvRetries] = .int(uvRetries) }
        if forcePINChange { map[Field.forcePINChange] = .boolean(true) }
        if let pinLength { map[Field.pinLength] = .int(pinLength) }
        if let minPINLength { map[Field.minPINLength] = .int(minPINLength) }
        if !minPINLengthRPIDs.isEmpty {
            map[Field.minPINLengthRPIDs] = .array(minPINLengthRPIDs.map { .textString($0) })
        }
        if let alwaysUV { map[Field.alwaysUV] = .boolean(alwaysUV) }
        if let enterpriseAttestationEnabled {
            map[Field.enterpriseAttestationEnabled] = .boolean(enterpriseAttestationEnabled)
        }
        if let enterpriseAttestation {
            map[Field.enterpriseAttestationKey] = .byteString(enterpriseAttestation.key)
            map[Field.enterpriseAttestationCertificate] = .byteString(enterpriseAttestation.certificate)
            map[Field.enterpriseAttestationRootCertificate] = .byteString(
                enterpriseAttestation.rootCertificate)
        }
        encodeFingerprints(into: &map)
        encodeLargeBlobFields(into: &map)
        encodeStoredCredentialKeys(into: &map)
        encodePersistentTokenField(into: &map)
        return CBOREncoder.encode(.map(map))
    }

    /// Decodes a state file, refusing anything foreign, newer or damaged.
    init(decoding bytes: [UInt8]) throws(VirtualKeyError) {
        let value: CBORValue
        do {
            value = try CBORDecoder(options: .ctap2).decode(bytes)
        } catch {
            throw VirtualKeyError(
                .stateFileForeign, "The file is not a virtual authenticator state file (it is not CBOR).",
                underlying: error)
        }
        guard let map = value.mapValue, map[Field.magic]?.stringValue == Self.magic else {
            throw VirtualKeyError(.stateFileForeign, "The file is not a virtual authenticator state file.")
        }
        guard let version = map[Field.version]?.intValue else {
            throw VirtualKeyError(.stateFileCorrupt, "The state file has no format version.")
        }
        guard version == Self.formatVersion else {
            throw VirtualKeyError(
                .stateFileVersion,
                "The state file has format version \(version); this build reads version \(Self.formatVersion)."
            )
        }
        func field(_ name: String) throws(VirtualKeyError) -> CBORValue {
            guard let v = map[name] else {
                throw VirtualKeyError(.stateFileCorrupt, "The state file lacks its \(name) field.")
            }
            return v
        }
        func data(_ name: String, count: Int? = nil) throws(VirtualKeyError) -> [UInt8] {
            guard let b = try field(name).bytesValue, count.map({ b.count == $0 }) ?? !b.isEmpty else {
                throw VirtualKeyError(.stateFileCorrupt, "The state file's \(name) field is damaged.")
            }
            return b
        }
        func counter(_ v: CBORValue?, _ name: String) throws(VirtualKeyError) -> UInt32 {
            guard let n = v?.uint64Value, n <= UInt64(UInt32.max) else {
                throw VirtualKeyError(.stateFileCorrupt, "The state file's \(name) is not a 32-bit counter.")
            }
            return UInt32(n)
        }
        aaguid = try data(Field.aaguid, count: 16)
        wrappingKey = try data(Field.wrappingKey, count: 32)
        attestationKey = try data(Field.attestationKey, count: 32)
        attestationCertificate = try data(Field.attestationCertificate)
        rootCertificate = try data(Field.rootCertificate)
        signatureCounter = try counter(map[Field.signatureCounter], Field.signatureCounter)
        guard let next = try field(Field.nextSequence).uint64Value else {
            throw VirtualKeyError(.stateFileCorrupt, "The state file's nextSequence is not a number.")
        }
        nextSequence = next
        guard let counters = try field(Field.credentialCounters).mapValue else {
            throw VirtualKeyError(.stateFileCorrupt, "The state file's credentialCounters is not a map.")
        }
        credentialCounters = [:]
        for entry in counters {
            guard let id = entry.key.bytesValue else {
                throw VirtualKeyError(
                    .stateFileCorrupt, "A credential counter is not keyed by a credential ID.")
            }
            credentialCounters[id] = try counter(entry.value, "credential counter")
        }
        guard let list = try field(Field.credentials).arrayValue else {
            throw VirtualKeyError(.stateFileCorrupt, "The state file's credentials is not a list.")
        }
        credentials = []
        for item in list {
            guard let m = item.mapValue else {
                throw VirtualKeyError(.stateFileCorrupt, "A stored credential is not a map.")
            }
            credentials.append(try DiscoverableCredential(decoding: m))
        }
        if let v = map[Field.pinHash] {
            guard let hash = v.bytesValue, hash.count == PINPolicy.hashLength else {
                throw VirtualKeyError(.stateFileCorrupt, "The state file's PIN hash is damaged.")
            }
            pinHash = hash
        }
        func retries(_ name: String, max: Int) throws(VirtualKeyError) -> Int? {
            guard let v = map[name] else { return nil }
            guard let n = v.intValue, (0...max).contains(n) else {
                throw VirtualKeyError(.stateFileCorrupt, "The state file's \(name) is out of range.")
            }
            return n
        }
        pinRetries = try retries(Field.pinRetries, max: PINPolicy.maxRetries) ?? PINPolicy.maxRetries
        uvRetries = try retries(Field.uvRetries, max: 25)
        if let v = map[Field.forcePINChange] {
            guard let flag = v.boolValue else {
                throw VirtualKeyError(.stateFileCorrupt, "The state file's forcePINChange is not a Boolean.")
            }
            forcePINChange = flag
        }
        try decodeConfigurationFields(map)
        try decodeFingerprints(map)
        try decodeLargeBlobFields(map)
        try decodeStoredCredentialKeys(map)
        try decodePersistentTokenField(map)
    }

    /// The fields authenticatorConfig and enterprise attestation added; each is optional.
    private mutating func decodeConfigurationFields(_ map: CBORMap) throws(VirtualKeyError) {
        func damaged(_ name: String) -> VirtualKeyError {
            VirtualKeyError(.stateFileCorrupt, "The state file's \(name) field is damaged.")
        }
        func length(_ name: String) throws(VirtualKeyError) -> Int? {
            guard let v = map[name] else { return nil }
            guard let n = v.intValue, (0...PINPolicy.maxLength).contains(n) else { throw damaged(name) }
            return n
        }
        func flag(_ name: String) throws(VirtualKeyError) -> Bool? {
            guard let v = map[name] else { return nil }
            guard let b = v.boolValue else { throw damaged(name) }
            return b
        }
        pinLength = try length(Field.pinLength)
        minPINLength = try length(Field.minPINLength)
        if let v = map[Field.minPINLengthRPIDs] {
            // A real list holds a handful of RP IDs; cap what a damaged file can make us keep.
            guard let list = v.arrayValue, list.count <= 1024 else { throw damaged(Field.minPINLengthRPIDs) }
            minPINLengthRPIDs = []
            for item in list {
                guard let text = item.stringValue else { throw damaged(Field.minPINLengthRPIDs) }
                minPINLengthRPIDs.append(text)
            }
        }
        alwaysUV = try flag(Field.alwaysUV)
        enterpriseAttestationEnabled = try flag(Field.enterpriseAttestationEnabled)
        let key = map[Field.enterpriseAttestationKey]
        let certificate = map[Field.enterpriseAttestationCertificate]
        let root = map[Field.enterpriseAttestationRootCertificate]
        if key != nil || certificate != nil || root != nil {
            guard let k = key?.bytesValue, k.count == 32, let c = certificate?.bytesValue, !c.isEmpty,
                let r = root?.bytesValue, !r.isEmpty
            else { throw damaged("enterprise attestation") }
            enterpriseAttestation = EnterpriseAttestationIdentity(key: k, certificate: c, rootCertificate: r)
        }
    }
}

extension DiscoverableCredential {
    private enum Field {
        static let id = "id"
        static let rpID = "rpId"
        static let rpName = "rpName"
        static let userID = "userId"
        static let userName = "userName"
        static let userDisplayName = "userDisplayName"
        static let algorithm = "alg"
        static let seed = "seed"
        static let signatureCounter = "signatureCounter"
        static let sequence = "sequence"
    }

    func encoded() -> CBORMap {
        var map = CBORMap()
        map[Field.id] = .byteString(id)
        map[Field.rpID] = .textString(rpID)
        if let rpName { map[Field.rpName] = .textString(rpName) }
        map[Field.userID] = .byteString(userID)
        if let userName { map[Field.userName] = .textString(userName) }
        if let userDisplayName { map[Field.userDisplayName] = .textString(userDisplayName) }
        map[Field.algorithm] = .int(algorithm.rawValue)
        map[Field.seed] = .byteString(seed)
        map[Field.signatureCounter] = .unsigned(UInt64(signatureCounter))
        map[Field.sequence] = .unsigned(sequence)
        encodeExtensionFields(into: &map)
        return map
    }

    init(decoding map: CBORMap) throws(VirtualKeyError) {
        func damaged(_ name: String) -> VirtualKeyError {
            VirtualKeyError(.stateFileCorrupt, "A stored credential's \(name) field is missing or damaged.")
        }
        func optionalText(_ name: String) throws(VirtualKeyError) -> String? {
            guard let v = map[name] else { return nil }
            guard let s = v.stringValue else { throw damaged(name) }
            return s
        }
        guard let id = map[Field.id]?.bytesValue, !id.isEmpty else { throw damaged(Field.id) }
        guard let rpID = map[Field.rpID]?.stringValue else { throw damaged(Field.rpID) }
        guard let userID = map[Field.userID]?.bytesValue else { throw damaged(Field.userID) }
        guard let alg = map[Field.algorithm]?.intValue else { throw damaged(Field.algorithm) }
        guard let seed = map[Field.seed]?.bytesValue, seed.count == CredentialPrivateKey.seedLength else {
            throw damaged(Field.seed)
        }
        guard let counter = map[Field.signatureCounter]?.uint64Value, counter <= UInt64(UInt32.max) else {
            throw damaged(Field.signatureCounter)
        }
        guard let sequence = map[Field.sequence]?.uint64Value else { throw damaged(Field.sequence) }
        // A stored (RSA) key is in the state's own field; a missing one leaves the credential unusable.
        let algorithm = COSEAlgorithm(rawValue: alg)
        guard CredentialPrivateKey.isStored(algorithm)
            || CredentialPrivateKey(algorithm: algorithm, seed: seed) != nil
        else { throw damaged(Field.seed) }
        self.init(
            id: id, rpID: rpID, rpName: try optionalText(Field.rpName), userID: userID,
            userName: try optionalText(Field.userName),
            userDisplayName: try optionalText(Field.userDisplayName),
            algorithm: COSEAlgorithm(rawValue: alg), seed: seed, signatureCounter: UInt32(counter),
            sequence: sequence)
        try decodeExtensionFields(map)
    }
}
