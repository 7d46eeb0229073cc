import CBOR

/// The authenticatorGetInfo response (CTAP 2.2 §6.4): what the authenticator supports.
///
/// Every member of CTAP 2.1 and 2.2 has a property; members this library does not know yet
/// stay in ``unknownFields`` rather than being dropped, and ``fields`` keeps the whole map.
public struct AuthenticatorInfo: Hashable, Sendable {
    /// The CBOR keys of the getInfo response (CTAP 2.2 §6.4 table).
    public enum Key {
        /// versions (0x01).
        public static let versions: CBORValue = 0x01
        /// extensions (0x02).
        public static let extensions: CBORValue = 0x02
        /// aaguid (0x03).
        public static let aaguid: CBORValue = 0x03
        /// options (0x04).
        public static let options: CBORValue = 0x04
        /// maxMsgSize (0x05).
        public static let maxMsgSize: CBORValue = 0x05
        /// pinUvAuthProtocols (0x06).
        public static let pinUVAuthProtocols: CBORValue = 0x06
        /// maxCredentialCountInList (0x07).
        public static let maxCredentialCountInList: CBORValue = 0x07
        /// maxCredentialIdLength (0x08).
        public static let maxCredentialIDLength: CBORValue = 0x08
        /// transports (0x09).
        public static let transports: CBORValue = 0x09
        /// algorithms (0x0A).
        public static let algorithms: CBORValue = 0x0A
        /// maxSerializedLargeBlobArray (0x0B).
        public static let maxSerializedLargeBlobArray: CBORValue = 0x0B
        /// forcePINChange (0x0C).
        public static let forcePINChange: CBORValue = 0x0C
        /// minPINLength (0x0D).
        public static let minPINLength: CBORValue = 0x0D
        /// firmwareVersion (0x0E).
        public static let firmwareVersion: CBORValue = 0x0E
        /// maxCredBlobLength (0x0F).
        public static let maxCredBlobLength: CBORValue = 0x0F
        /// maxRPIDsForSetMinPINLength (0x10).
        public static let maxRPIDsForSetMinPINLength: CBORValue = 0x10
        /// preferredPlatformUvAttempts (0x11).
        public static let preferredPlatformUVAttempts: CBORValue = 0x11
        /// uvModality (0x12).
        public static let uvModality: CBORValue = 0x12
        /// certifications (0x13).
        public static let certifications: CBORValue = 0x13
        /// remainingDiscoverableCredentials (0x14).
        public static let remainingDiscoverableCredentials: CBORValue = 0x14
        /// vendorPrototypeConfigCommands (0x15).
        public static let vendorPrototypeConfigCommands: CBORValue = 0x15
        /// attestationFormats (0x16).
        public static let attestationFormats: CBORValue = 0x16
        /// uvCountSinceLastPinEntry (0x17).
        public static let uvCountSinceLastPINEntry: CBORValue = 0x17
        /// longTouchForReset (0x18).
        public static let longTouchForReset: CBORValue = 0x18
        /// encIdentifier (0x19).
        public static let encIdentifier: CBORValue = 0x19
        /// transportsForReset (0x1A).
        public static let transportsForReset: CBORValue = 0x1A
        /// pinComplexityPolicy (0x1B).
        public static let pinComplexityPolicy: CBORValue = 0x1B
        /// pinComplexityPolicyURL (0x1C).
        public static let pinComplexityPolicyURL: CBORValue = 0x1C
        /// maxPINLength (0x1D).
        public static let maxPINLength: CBORValue = 0x1D
        /// encCredStoreState (0x1E).
        public static let encCredStoreState: CBORValue = 0x1E
        /// authenticatorConfigCommands (0x1F).
        public static let authenticatorConfigCommands: CBORValue = 0x1F

        static let known: ClosedRange<UInt64> = 0x01...0x1F
    }

    /// Protocol versions: `FIDO_2_0`, `FIDO_2_1`, `FIDO_2_2`, `U2F_V2`, ..., as sent.
    public var versions: [AuthenticatorVersion]
    /// Extension identifiers the authenticator supports, as sent.
    public var extensions: [ExtensionIdentifier]
    /// The authenticator model's AAGUID.
    public var aaguid: AAGUID
    /// Options and their state (`rk`, `up`, `uv`, `clientPin`, `credMgmt`, ...).
    public var options: [AuthenticatorOption: Bool]
    /// The largest message the authenticator accepts, when stated (the spec's default is 1024).
    public var maxMsgSize: UInt64?
    /// PIN/UV auth protocol versions, in order of preference.
    public var pinUVAuthProtocols: [UInt64]
    /// The most credentials an allow or exclude list may hold.
    public var maxCredentialCountInList: UInt64?
    /// The longest credential ID the authenticator accepts.
    public var maxCredentialIDLength: UInt64?
    /// Transports the authenticator supports (`usb`, `nfc`, `ble`, `hybrid`, `internal`).
    public var transports: [String]
    /// Supported algorithms, in order of preference.
    public var algorithms: [PublicKeyCredentialParameters]
    /// The largest serialized large-blob array the authenticator can store.
    public var maxSerializedLargeBlobArray: UInt64?
    /// Whether the PIN must be changed before use.
    public var forcePINChange: Bool?
    /// The current minimum PIN length, in Unicode code points.
    public var minPINLength: UInt64?
    /// The firmware version.
    public var firmwareVersion: UInt64?
    /// The largest credBlob the authenticator stores.
    public var maxCredBlobLength: UInt64?
    /// How many RP IDs setMinPINLength accepts.
    public var maxRPIDsForSetMinPINLength: UInt64?
    /// How many built-in UV attempts the platform should try before falling back to the PIN.
    public var preferredPlatformUVAttempts: UInt64?
    /// The user verification methods (FIDO Registry "user verification method" bits).
    public var uvModality: UInt64?
    /// Certifications held, by name (`FIPS-CMVP-2`, `FIDO`, ...) and level.
    public var certifications: [String: Int]?
    /// An estimate of how many more discoverable credentials fit.
    public var remainingDiscoverableCredentials: UInt64?
    /// Vendor prototype authenticatorConfig subcommands.
    public var vendorPrototypeConfigCommands: [UInt64]?
    /// Attestation statement formats the authenticator can produce, preferred first.
    public var attestationFormats: [String]?
    /// Built-in UV uses since the PIN was last entered.
    public var uvCountSinceLastPINEntry: UInt64?
    /// Whether reset needs a long touch.
    public var longTouchForReset: Bool?
    /// The encrypted device identifier.
    public var encIdentifier: [UInt8]?
    /// Transports over which reset is allowed.
    public var transportsForReset: [String]?
    /// Whether a PIN complexity policy is in force.
    public var pinComplexityPolicy: Bool?
    /// Where the PIN complexity policy is described (a URL, as bytes).
    public var pinComplexityPolicyURL: [UInt8]?
    /// The longest PIN accepted, in Unicode code points.
    public var maxPINLength: UInt64?
    /// The encrypted credential store state.
    public var encCredStoreState: [UInt8]?
    /// authenticatorConfig subcommands supported.
    public var authenticatorConfigCommands: [UInt64]?
    /// Members this library does not know, by key, as sent.
    public var unknownFields: CBORMap
    /// The whole response map, as decoded.
    public var fields: CBORMap

    /// Whether an option is present and true.
    public func isEnabled(_ option: AuthenticatorOption) -> Bool { options[option] == true }

    /// Parses the CBOR body of a getInfo response (without the status byte).
    public init(cbor bytes: [UInt8]) throws(CTAP2Error) {
        try self.init(map: ResponseDecoding.decodeMap(bytes, what: "getInfo response"))
    }

    /// Parses a decoded getInfo response map.
    public init(map: CBORMap) throws(CTAP2Error) {
        let r = FieldReader(map, "getInfo response")
        guard let versions = try r.textArray(Key.versions, "versions") else { throw r.missing("versions") }
        self.versions = versions.map(AuthenticatorVersion.init(rawValue:))
        extensions = (try r.textArray(Key.extensions, "extensions") ?? [])
            .map(ExtensionIdentifier.init(rawValue:))
        guard let aaguidBytes = try r.bytes(Key.aaguid, "aaguid") else { throw r.missing("aaguid") }
        guard let aaguid = AAGUID(bytes: aaguidBytes) else {
            throw CTAP2Error.malformed(
                "The aaguid of the getInfo response is \(aaguidBytes.count) bytes, not 16.")
        }
        self.aaguid = aaguid
        var options: [AuthenticatorOption: Bool] = [:]
        if let optionMap = try r.subMap(Key.options, "options") {
            for entry in optionMap {
                guard let name = entry.key.stringValue, let value = entry.value.boolValue else {
                    throw CTAP2Error.malformed(
                        "An option in the getInfo response is not a text key with a Boolean value.")
                }
                options[AuthenticatorOption(rawValue: name)] = value
            }
        }
        self.options = options
        maxMsgSize = try r.uint(Key.maxMsgSize, "maxMsgSize")
        pinUVAuthProtocols = try r.uintArray(Key.pinUVAuthProtocols, "pinUvAuthProtocols") ?? []
        maxCredentialCountInList = try r.uint(Key.maxCredentialCountInList, "maxCredentialCountInList")
        maxCredentialIDLength = try r.uint(Key.maxCredentialIDLength, "maxCredentialIdLength")
        transports = try r.textArray(Key.transports, "transports") ?? []
        var algorithms: [PublicKeyCredentialParameters] = []
        for item in try r.array(Key.algorithms, "algorithms") ?? [] {
            algorithms.append(try PublicKeyCredentialParameters(cbor: item, context: "getInfo response"))
        }
        self.algorithms = algorithms
        maxSerializedLargeBlobArray = try r.uint(
            Key.maxSerializedLargeBlobArray, "maxSerializedLargeBlobArray")
        forcePINChange = try r.bool(Key.forcePINChange, "forcePINChange")
        minPINLength = try r.uint(Key.minPINLength, "minPINLength")
        firmwareVersion = try r.uint(Key.firmwareVersion, "firmwareVersion")
        maxCredBlobLength = try r.uint(Key.maxCredBlobLength, "maxCredBlobLength")
        maxRPIDsForSetMinPINLength = try r.uint(Key.maxRPIDsForSetMinPINLength, "maxRPIDsForSetMinPINLength")
        preferredPlatformUVAttempts = try r.uint(
            Key.preferredPlatformUVAttempts, "preferredPlatformUvAttempts")
        uvModality = try r.uint(Key.uvModality, "uvModality")
        if let certMap = try r.subMap(Key.certifications, "certifications") {
            var certs: [String: Int] = [:]
            for entry in certMap {
                guard let name = entry.key.stringValue, let level = entry.value.intValue else {
                    throw CTAP2Error.malformed(
                        "A certification in the getInfo response is not a name with an integer level.")
                }
                certs[name] = level
            }
            certifications = certs
        }
        remainingDiscoverableCredentials = try r.uint(
            Key.remainingDiscoverableCredentials, "remainingDiscoverableCredentials")
        vendorPrototypeConfigCommands = try r.uintArray(
            Key.vendorPrototypeConfigCommands, "vendorPrototypeConfigCommands")
        attestationFormats = try r.textArray(Key.attestationFormats, "attestationFormats")
        uvCountSinceLastPINEntry = try r.uint(Key.uvCountSinceLastPINEntry, "uvCountSinceLastPinEntry")
        longTouchForReset = try r.bool(Key.longTouchForReset, "longTouchForReset")
        encIdentifier = try r.bytes(Key.encIdentifier, "encIdentifier")
        transportsForReset = try r.textArray(Key.transportsForReset, "transportsForReset")
        pinComplexityPolicy = try r.bool(Key.pinComplexityPolicy, "pinComplexityPolicy")
        pinComplexityPolicyURL = try r.bytes(Key.pinComplexityPolicyURL, "pinComplexityPolicyURL")
        maxPINLength = try r.uint(Key.maxPINLength, "maxPINLength")
        encCredStoreState = try r.bytes(Key.encCredStoreState, "encCredStoreState")
        authenticatorConfigCommands = try r.uintArray(
            Key.authenticatorConfigCommands, "authenticatorConfigCommands")
        unknownFields = r.unknownEntries(known: Key.known)
        fields = map
    }
}
