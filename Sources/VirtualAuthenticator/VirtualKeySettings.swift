import CTAPHID

/// What a virtual key is, as a command line (`securitykey virtual serve`) or a test states it:
/// a profile and the few choices on top of it. ``configuration`` turns the settings into the
/// ``VirtualKey/Configuration`` the key is made from, so every tool builds the same key from
/// the same settings.
public struct VirtualKeySettings: Sendable, Hashable {
    /// What the key implements.
    public enum Profile: String, CaseIterable, Sendable, Hashable {
        /// FIDO_2_0 with clientPIN.
        case ctap20
        /// FIDO_2_1: credential management, authenticatorConfig, pinUvAuthToken permissions, large blobs.
        case ctap21
        /// FIDO_2_1_PRE with credentialMgmtPreview only, as keys shipped before CTAP 2.1 was final.
        case ctap21Preview = "ctap21-pre"
        /// FIDO_2_2 and FIDO_2_3 (the default): everything of ctap21 plus thirdPartyPayment,
        /// attestationFormats, maxPINLength, pinComplexityPolicy and the other CTAP 2.2 members.
        case ctap22
    }

    /// The profile.
    public var profile: Profile = .ctap22
    /// With ``Profile/ctap20``: a U2F-only key (CTAP1, no CTAP2).
    public var ctap1Only = false
    /// With ``Profile/ctap21`` or ``Profile/ctap22``: start with alwaysUv on.
    public var alwaysUV = false
    /// With ``Profile/ctap21`` or ``Profile/ctap22``: enterprise attestation enabled from the start.
    public var enterpriseAttestation = false
    /// With ``Profile/ctap21`` or ``Profile/ctap22``: the RP IDs given vendor-facilitated enterprise attestation.
    public var enterpriseAttestationRPIDs: [String] = []
    /// With ``Profile/ctap21`` or ``Profile/ctap22``: maxSerializedLargeBlobArray (the profile's default when nil).
    public var maxLargeBlobArray: Int?
    /// With ``Profile/ctap22``: the CTAP 2.2 members (PIN complexity policy, maxPINLength,
    /// longTouchForReset, transportsForReset, preferredPlatformUvAttempts).
    public var ctap22 = VirtualKey.Configuration.ctap22().ctap22
    /// The AAGUID of a new key (a random one when nil).
    public var aaguid: [UInt8]?
    /// How new credentials are attested.
    public var attestation: VirtualKey.AttestationMode = .packed
    /// The PIN a new key starts with; nil for none.
    public var pin: String?
    /// The extensions the key reports (the profile's when nil).
    public var extensions: [String]?
    /// The COSE algorithms the key offers, in getInfo's order (``COSEAlgorithm/offeredByDefault``
    /// when nil); with ML-DSA the key reports CTAPHID's largest message as its maxMsgSize.
    public var algorithms: [COSEAlgorithm]?
    /// The longest credBlob stored.
    public var maxCredBlobLength = 32
    /// A simulated fingerprint sensor (ctap21, ctap22 and ctap21-pre only); nil for none.
    public var fingerprintSensor: VirtualKey.FingerprintSensor?
    /// An attestation key and chain from outside, instead of the state's; nil for the state's.
    /// The key's maxMsgSize grows to carry the chain in its makeCredential replies.
    public var attestationIdentity: VirtualKey.ImportedAttestationIdentity?

    /// The defaults: a ctap22 key with packed attestation and no PIN.
    public init() {}

    /// The CTAPHID capabilities its servers announce in INIT: no CBOR for a U2F-only key.
    public var ctaphidCapabilities: CTAPHIDCapabilities {
        ctap1Only ? UDPCTAPHIDServer.Configuration.ctap1OnlyCapabilities : [.wink, .cbor]
    }

    /// The configuration a key with these settings is made from.
    public var configuration: VirtualKey.Configuration {
        var configuration: VirtualKey.Configuration
        switch profile {
        case .ctap21, .ctap22:
            configuration =
                profile == .ctap22
                ? .ctap22(alwaysUV: alwaysUV, enterpriseAttestationEnabled: enterpriseAttestation)
                : .ctap21(alwaysUV: alwaysUV, enterpriseAttestationEnabled: enterpriseAttestation)
            configuration.enterpriseAttestationRPIDs = enterpriseAttestationRPIDs
            if let maxLargeBlobArray { configuration.maxSerializedLargeBlobArray = maxLargeBlobArray }
            if profile == .ctap22 { configuration.ctap22 = ctap22 }
        case .ctap21Preview: configuration = .ctap21Preview()
        case .ctap20: configuration = ctap1Only ? .ctap1Only() : VirtualKey.Configuration()
        }
        if let aaguid { configuration.aaguid = aaguid }
        configuration.attestation = attestation
        configuration.attestationIdentity = attestationIdentity
        if let attestationIdentity {
            // Hosts refuse a reply longer than the key's maxMsgSize: leave room for the chain in
            // x5c beside authData, the signature and the extensions.
            let chain = attestationIdentity.certificates.reduce(0) { $0 + $1.count }
            configuration.maxMsgSize = max(
                configuration.maxMsgSize, min(chain + 1024, COSEAlgorithm.largeMessageSize))
        }
        configuration.pin = pin
        if let extensions { configuration.extensions = extensions }
        if let algorithms {
            configuration.algorithms = algorithms
            if algorithms.contains(where: \.needsLargeMessages) {
                configuration.maxMsgSize = max(configuration.maxMsgSize, COSEAlgorithm.largeMessageSize)
            }
        }
        configuration.maxCredBlobLength = maxCredBlobLength
        if let fingerprintSensor { configuration = configuration.withFingerprintSensor(fingerprintSensor) }
        return configuration
    }
}

extension UserPresencePolicy {
    /// The policy a name states: `auto` (approve), `delay:MS` (approve after MS ms, 0 to
    /// 600000), `deny` or `never`; nil for any other text.
    public init?(name: String) {
        switch name {
        case "auto": self = .approve
        case "deny": self = .deny
        case "never": self = .never
        default:
            guard name.hasPrefix("delay:"), let ms = Int(name.dropFirst(6)), ms >= 0, ms <= 600_000 else {
                return nil
            }
            self = .approveAfter(.milliseconds(ms))
        }
    }
}
