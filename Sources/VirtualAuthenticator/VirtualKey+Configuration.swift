extension VirtualKey {
    /// How the virtual key attests new credentials (WebAuthn §8).
    public enum AttestationMode: Sendable, Hashable {
        /// Packed attestation signed by the attestation key, with the attestation certificate
        /// (issued by ``VirtualKey/attestationRootCertificateDER``) in `x5c` (WebAuthn §8.2).
        case packed
        /// Packed self attestation: signed by the new credential's own key, no `x5c`.
        case selfAttestation
        /// The "none" format: no attestation statement (WebAuthn §8.7).
        case none
    }

    /// Where the signature counter lives (WebAuthn §6.1.1).
    public enum SignatureCounterMode: Sendable, Hashable {
        /// One counter for the whole authenticator, as YubiKeys do.
        case global
        /// One counter per credential.
        case perCredential
    }

    /// Identity, limits and behaviour of a virtual key. The defaults describe a USB/NFC key in
    /// the manner of a YubiKey 5 without a PIN set; tests change fields to imitate other keys.
    public struct Configuration: Sendable, Hashable {
        /// The AAGUID of a new state; nil makes a random one. A state file keeps its own AAGUID,
        /// and loading one whose AAGUID differs from a non-nil value here fails.
        public var aaguid: [UInt8]?
        /// `versions` reported by authenticatorGetInfo.
        public var versions: [String]
        /// `options` reported by authenticatorGetInfo. `rk` enables discoverable credentials;
        /// `uv: true` simulates a built-in verification method that always succeeds.
        public var options: [String: Bool]
        /// The largest request (CBOR parameters) accepted, in bytes.
        public var maxMsgSize: Int
        /// The most credential descriptors accepted in an allow or exclude list.
        public var maxCredentialCountInList: Int
        /// The longest credential ID accepted in a descriptor, in bytes.
        public var maxCredentialIdLength: Int
        /// Supported COSE algorithms, in the order getInfo lists them.
        public var algorithms: [COSEAlgorithm]
        /// `transports` reported by authenticatorGetInfo.
        public var transports: [String]
        /// `firmwareVersion` reported by authenticatorGetInfo, or nil to leave it out.
        public var firmwareVersion: Int?
        /// How many discoverable credentials fit.
        public var maxDiscoverableCredentials: Int
        /// How new credentials are attested.
        public var attestation: AttestationMode
        /// Whether signature counters are global or per credential.
        public var signatureCounter: SignatureCounterMode
        /// How long a request waits for user presence before CTAP2_ERR_USER_ACTION_TIMEOUT.
        public var userPresenceTimeout: Duration
        /// How often keepalive status `userPresenceNeeded` is reported while waiting.
        public var keepaliveInterval: Duration
        /// How long after getAssertion (or the previous getNextAssertion) getNextAssertion works.
        public var getNextAssertionWindow: Duration
        /// How long after power-up authenticatorReset is allowed.
        public var resetWindow: Duration

        /// Creates a configuration; every parameter has a YubiKey-5-like default.
        public init(
            aaguid: [UInt8]? = nil,
            versions: [String] = ["U2F_V2", "FIDO_2_0"],
            options: [String: Bool] = ["rk": true, "up": true, "plat": false],
            maxMsgSize: Int = 1200,
            maxCredentialCountInList: Int = 8,
            maxCredentialIdLength: Int = 64,
            algorithms: [COSEAlgorithm] = [.es256, .edDSA, .es384],
            transports: [String] = ["nfc", "usb"],
            firmwareVersion: Int? = 0x01_00_00,
            maxDiscoverableCredentials: Int = 25,
            attestation: AttestationMode = .packed,
            signatureCounter: SignatureCounterMode = .global,
            userPresenceTimeout: Duration = .seconds(30),
            keepaliveInterval: Duration = .milliseconds(100),
            getNextAssertionWindow: Duration = .seconds(30),
            resetWindow: Duration = .seconds(10)
        ) {
            self.aaguid = aaguid
            self.versions = versions
            self.options = options
            self.maxMsgSize = maxMsgSize
            self.maxCredentialCountInList = maxCredentialCountInList
            self.maxCredentialIdLength = maxCredentialIdLength
            self.algorithms = algorithms
            self.transports = transports
            self.firmwareVersion = firmwareVersion
            self.maxDiscoverableCredentials = maxDiscoverableCredentials
            self.attestation = attestation
            self.signatureCounter = signatureCounter
            self.userPresenceTimeout = userPresenceTimeout
            self.keepaliveInterval = keepaliveInterval
            self.getNextAssertionWindow = getNextAssertionWindow
            self.resetWindow = resetWindow
        }

        /// Whether discoverable credentials are supported (`rk` option).
        var supportsDiscoverableCredentials: Bool { options["rk"] == true }
        /// Whether a built-in user verification method is present and configured (`uv` option).
        var hasBuiltInUserVerification: Bool { options["uv"] == true }

        func validate() throws(VirtualKeyError) {
            if let aaguid, aaguid.count != 16 {
                throw VirtualKeyError(
                    .invalidConfiguration, "The AAGUID must be 16 bytes, not \(aaguid.count).")
            }
            if algorithms.isEmpty {
                throw VirtualKeyError(.invalidConfiguration, "At least one algorithm must be supported.")
            }
            for algorithm in algorithms where !COSEAlgorithm.implemented.contains(algorithm) {
                throw VirtualKeyError(.invalidConfiguration, "Algorithm \(algorithm) is not implemented.")
            }
            if maxCredentialIdLength < CredentialID.length {
                throw VirtualKeyError(
                    .invalidConfiguration,
                    "maxCredentialIdLength must be at least \(CredentialID.length), the length of this key's credential IDs."
                )
            }
            if maxMsgSize < 1 || maxCredentialCountInList < 1 || maxDiscoverableCredentials < 0 {
                throw VirtualKeyError(
                    .invalidConfiguration, "Message size, list and storage limits must be positive.")
            }
            if keepaliveInterval <= .zero {
                throw VirtualKeyError(.invalidConfiguration, "The keepalive interval must be positive.")
            }
        }
    }
}
