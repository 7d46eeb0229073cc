import CBOR

extension VirtualKey.Configuration {
    /// What a CTAP 2.2 key adds to getInfo and how it behaves behind those members (CTAP 2.2
    /// §6.4): a PIN complexity policy, the longest PIN, how a reset must be done, the attestation
    /// formats offered, and how many built-in verification attempts a platform should make.
    public struct CTAP22Features: Sendable, Hashable {
        /// Whether the key enforces its PIN complexity policy (getInfo pinComplexityPolicy): a PIN
        /// of one repeated character ("1111") or of consecutive characters ("1234", "9876",
        /// "abcd") is refused with CTAP2_ERR_PIN_POLICY_VIOLATION.
        public var pinComplexityPolicy = false
        /// Where the policy is described (getInfo pinComplexityPolicyURL, sent as UTF-8 bytes).
        public var pinComplexityPolicyURL: String?
        /// The longest PIN, in Unicode code points (getInfo maxPINLength; 4 to 63).
        public var maxPINLength = PINPolicy.maxLength
        /// Whether authenticatorReset needs the touch held for several seconds (getInfo
        /// longTouchForReset); a platform tells the user so.
        public var longTouchForReset = false
        /// The transports over which authenticatorReset works (getInfo transportsForReset); nil
        /// leaves the member out (every transport).
        public var transportsForReset: [String]?
        /// How many built-in verification attempts a platform should make before it falls back
        /// to the PIN (getInfo preferredPlatformUvAttempts, reported with built-in UV; 1 to 25).
        public var preferredPlatformUVAttempts = 1

        /// A CTAP 2.2 key with no PIN complexity policy, a 63-code-point PIN and a short touch for reset.
        public init() {}

        func validate() throws(VirtualKeyError) {
            guard (4...PINPolicy.maxLength).contains(maxPINLength) else {
                throw VirtualKeyError(.invalidConfiguration, "maxPINLength must be between 4 and 63.")
            }
            guard (1...25).contains(preferredPlatformUVAttempts) else {
                throw VirtualKeyError(
                    .invalidConfiguration, "preferredPlatformUvAttempts must be between 1 and 25.")
            }
            if let url = pinComplexityPolicyURL, url.utf8.count > 512 || !url.hasPrefix("https://") {
                throw VirtualKeyError(
                    .invalidConfiguration, "pinComplexityPolicyURL must be an https URL of at most 512 bytes.")
            }
        }

        /// Why this key refuses `pin` beyond CTAP 2.1's length rules (maxPINLength, the
        /// complexity policy), or nil. Never includes the PIN.
        func pinRefusal(_ pin: [UInt8]) -> String? {
            guard let text = String(validating: pin, as: UTF8.self) else { return nil }
            let scalars = Array(text.unicodeScalars.map(\.value))
            if scalars.count > maxPINLength {
                return "The PIN is longer than the maximum of \(maxPINLength) code points."
            }
            guard pinComplexityPolicy, scalars.count > 1 else { return nil }
            if Set(scalars).count == 1 { return "The PIN repeats a single character." }
            let steps = zip(scalars.dropFirst(), scalars).map { Int64($0) - Int64($1) }
            if steps.allSatisfy({ $0 == 1 }) || steps.allSatisfy({ $0 == -1 }) {
                return "The PIN is a run of consecutive characters."
            }
            return nil
        }
    }

    /// Whether getInfo is a CTAP 2.2 one (versions lists FIDO_2_2 or FIDO_2_3).
    var isCTAP22: Bool { versions.contains("FIDO_2_2") || versions.contains("FIDO_2_3") }

    /// Whether the key has a built-in verification method, enrolled or not (a fingerprint
    /// sensor, or a configured `uv` option).
    var hasBuiltInUserVerificationMethod: Bool { fingerprintSensor != nil || options["uv"] != nil }
}

extension VirtualKey.GetInfoMember {
    /// attestationFormats (CTAP 2.2 §6.4).
    static let attestationFormats = 0x16
    /// uvCountSinceLastPinEntry (CTAP 2.2 §6.4).
    static let uvCountSinceLastPINEntry = 0x17
    /// longTouchForReset (CTAP 2.2 §6.4).
    static let longTouchForReset = 0x18
    /// transportsForReset (CTAP 2.2 §6.4).
    static let transportsForReset = 0x1A
    /// pinComplexityPolicy (CTAP 2.2 §6.4).
    static let pinComplexityPolicy = 0x1B
    /// pinComplexityPolicyURL (CTAP 2.2 §6.4).
    static let pinComplexityPolicyURL = 0x1C
    /// maxPINLength (CTAP 2.2 §6.4).
    static let maxPINLength = 0x1D
    /// authenticatorConfigCommands (CTAP 2.2 §6.4).
    static let authenticatorConfigCommands = 0x1F
}

extension VirtualKey {
    /// The attestation formats this key can produce, in its order of preference (getInfo
    /// attestationFormats): the configured one, then "none".
    var attestationFormats: [String] {
        configuration.attestation == .none ? ["none"] : ["packed", "none"]
    }

    /// The CTAP 2.2 getInfo members (CTAP 2.2 §6.4), added by ``getInfo()`` to a CTAP 2.2 key's answer.
    func addCTAP22Info(to info: inout CBORMap) {
        guard configuration.isCTAP22 else { return }
        typealias M = GetInfoMember
        let features = configuration.ctap22
        info[M.attestationFormats] = .array(attestationFormats.map { .textString($0) })
        if configuration.hasBuiltInUserVerificationMethod {
            info[M.uvCountSinceLastPINEntry] = .int(uvCountSinceLastPINEntry)
            info[Self.getInfoPreferredPlatformUVAttempts] = .int(features.preferredPlatformUVAttempts)
        }
        if features.longTouchForReset { info[M.longTouchForReset] = true }
        if let transports = features.transportsForReset {
            info[M.transportsForReset] = .array(transports.map { .textString($0) })
        }
        if configuration.supportsClientPIN {
            info[M.pinComplexityPolicy] = .boolean(features.pinComplexityPolicy)
            if let url = features.pinComplexityPolicyURL {
                info[M.pinComplexityPolicyURL] = .byteString(Array(url.utf8))
            }
            info[M.maxPINLength] = .int(features.maxPINLength)
        }
        if configuration.supportsAuthenticatorConfig {
            var commands: [Int] = []
            if configuration.supportsEnterpriseAttestation { commands.append(0x01) }
            if configuration.supportsAlwaysUV { commands.append(0x02) }
            if configuration.supportsSetMinPINLength { commands.append(0x03) }
            info[M.authenticatorConfigCommands] = .array(commands.map { .int($0) })
        }
    }

    /// The attestation format of a new credential (CTAP 2.2 §6.1.2 step 17): the first entry of
    /// attestationFormatsPreference this key can produce, else the configured format. More
    /// than 16 entries, or one that is not text, is refused.
    func chooseAttestationFormat(_ preference: [CBORValue]?) throws(VirtualKeyError) -> String? {
        guard let preference else { return nil }
        guard preference.count <= 16 else {
            throw .rejected(.invalidLength, "attestationFormatsPreference lists more than 16 formats.")
        }
        var names: [String] = []
        for item in preference {
            guard let name = item.stringValue else {
                throw .rejected(.cborUnexpectedType, "An attestationFormatsPreference entry is not text.")
            }
            names.append(name)
        }
        return names.first { attestationFormats.contains($0) }
    }

    /// Counts a successful built-in verification (uvCountSinceLastPinEntry).
    func countBuiltInVerification() {
        uvCountSinceLastPINEntry = min(uvCountSinceLastPINEntry + 1, Int(UInt32.max))
    }
}
