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
        /// `uv: true` gives the key a built-in verification method (a simulated fingerprint
        /// sensor answering per ``UserVerificationPolicy``); `makeCredUvNotRqd: true` lets a
        /// protected key make non-discoverable credentials without verification. `clientPin`
        /// and `pinUvAuthToken` are set from the PIN state, whatever this says.
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
        /// PIN/UV auth protocols in getInfo's order (CTAP 2.1 §6.5.4); empty disables
        /// authenticatorClientPIN and the `clientPin` and `pinUvAuthToken` options.
        public var pinUvAuthProtocols: [Int]
        /// The shortest PIN accepted, in Unicode code points (§6.5.1; at least 4).
        public var minPINLength: Int
        /// A PIN the key starts with (the CLI's `virtual serve --pin`). A state file that already
        /// holds another PIN is refused, as one with another AAGUID is.
        public var pin: String?
        /// Whether the key, if it has a PIN when created, demands a PIN change before it issues
        /// tokens (§6.4 forcePINChange). The flag is kept in the state until changePIN succeeds.
        public var forcePINChange: Bool
        /// How many failed built-in verifications block built-in UV (uvRetries, §6.5.5.8; 1–25).
        public var maxUVRetries: Int
        /// A fresh pinUvAuthToken not used within this time stops working (§6.5.2.1 initial usage
        /// time limit).
        public var tokenInitialUsageTimeLimit: Duration
        /// User presence collected with a token counts for this long (§6.5.2.1 user present time limit).
        public var tokenUserPresentTimeLimit: Duration
        /// No pinUvAuthToken lives longer than this (§6.5.2.1 max usage time period).
        public var tokenMaxUsageTimePeriod: Duration
        /// How many RP IDs authenticatorConfig setMinPINLength accepts in minPinLengthRPIDs
        /// (getInfo maxRPIDsForSetMinPINLength, CTAP 2.1 §6.4; reported with `setMinPINLength`).
        public var maxRPIDsForSetMinPINLength: Int
        /// RP IDs for which enterpriseAttestation 1 (vendor-facilitated, CTAP 2.1 §7.1) yields an
        /// enterprise attestation; other RPs asking with 1 get the ordinary attestation.
        public var enterpriseAttestationRPIDs: [String]
        /// How long after credential management's enumerateRPsBegin or enumerateCredentialsBegin
        /// (or the previous "next") the matching "next" subcommand works (CTAP 2.1 §6.8).
        public var credentialManagementEnumerationWindow: Duration
        /// The extensions getInfo lists and the key processes (CTAP 2.1 §12; any of
        /// credProtect, credBlob, hmac-secret, hmac-secret-mc, minPinLength); nil gives what a
        /// key of the configured versions offers.
        public var extensions: [String]? = nil
        /// The longest credBlob stored (getInfo maxCredBlobLength, CTAP 2.1 §12.2; 32 to 4096).
        public var maxCredBlobLength: Int = 32
        /// A simulated fingerprint sensor (authenticatorBioEnrollment), or nil for none; see
        /// ``VirtualKey/Configuration/withFingerprintSensor(_:)``.
        public var fingerprintSensor: VirtualKey.FingerprintSensor? = nil
        /// Behave as a key that speaks only CTAP1/U2F: every CTAP2 message is answered
        /// CTAP1_ERR_INVALID_COMMAND (see ``VirtualKey/Configuration/ctap1Only()``).
        public var ctap1Only = false
        /// The largest serialized large-blob array stored, with `largeBlobs` (getInfo
        /// maxSerializedLargeBlobArray, CTAP 2.1 §6.4; at least 1024).
        public var maxSerializedLargeBlobArray: Int = 1024
        /// The persistent PinUvAuthToken of CTAP 2.2 (§6.5.5.7 `pcmr` permission, getInfo
        /// option `perCredMgmtRO`): a token that survives power cycles, good only for read-only
        /// credential management, and the getInfo members it decrypts, `encIdentifier` and
        /// `encCredStoreState`. Needs clientPIN and `credMgmt`.
        public var persistentPINUVAuthToken = false
        /// The CTAP 2.2 members of getInfo and the behaviour behind them (reported when
        /// ``versions`` lists FIDO_2_2 or FIDO_2_3); see ``CTAP22Features``.
        public var ctap22 = CTAP22Features()
        /// An attestation key and certificate chain from outside, used by packed attestation
        /// instead of the state's identity; nil uses the state's. ``maxMsgSize`` must leave room
        /// for the chain in makeCredential's reply (``VirtualKeySettings`` sees to it).
        public var attestationIdentity: ImportedAttestationIdentity? = nil

        /// Creates a configuration; every parameter has a YubiKey-5-like default.
        public init(
            aaguid: [UInt8]? = nil,
            versions: [String] = ["U2F_V2", "FIDO_2_0"],
            options: [String: Bool] = ["rk": true, "up": true, "plat": false],
            maxMsgSize: Int? = nil,
            maxCredentialCountInList: Int = 8,
            maxCredentialIdLength: Int = 64,
            algorithms: [COSEAlgorithm] = COSEAlgorithm.offeredByDefault,
            transports: [String] = ["nfc", "usb"],
            firmwareVersion: Int? = 0x01_00_00,
            maxDiscoverableCredentials: Int = 25,
            attestation: AttestationMode = .packed,
            signatureCounter: SignatureCounterMode = .global,
            userPresenceTimeout: Duration = .seconds(30),
            keepaliveInterval: Duration = .milliseconds(100),
            getNextAssertionWindow: Duration = .seconds(30),
            resetWindow: Duration = .seconds(10),
            pinUvAuthProtocols: [Int] = [2, 1],
            minPINLength: Int = 4,
            pin: String? = nil,
            forcePINChange: Bool = false,
            maxUVRetries: Int = 8,
            tokenInitialUsageTimeLimit: Duration = .seconds(19),
            tokenUserPresentTimeLimit: Duration = .seconds(19),
            tokenMaxUsageTimePeriod: Duration = .seconds(600),
            maxRPIDsForSetMinPINLength: Int = 0,
            enterpriseAttestationRPIDs: [String] = [],
            credentialManagementEnumerationWindow: Duration = .seconds(30)
        ) {
            self.aaguid = aaguid
            self.versions = versions
            self.options = options
            // 1200 bytes (a YubiKey 5's), or CTAPHID's largest message when ML-DSA replies need it.
            self.maxMsgSize =
                maxMsgSize
                ?? (algorithms.contains(where: \.needsLargeMessages) ? COSEAlgorithm.largeMessageSize : 1200)
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
            self.pinUvAuthProtocols = pinUvAuthProtocols
            self.minPINLength = minPINLength
            self.pin = pin
            self.forcePINChange = forcePINChange
            self.maxUVRetries = maxUVRetries
            self.tokenInitialUsageTimeLimit = tokenInitialUsageTimeLimit
            self.tokenUserPresentTimeLimit = tokenUserPresentTimeLimit
            self.tokenMaxUsageTimePeriod = tokenMaxUsageTimePeriod
            self.maxRPIDsForSetMinPINLength = maxRPIDsForSetMinPINLength
            self.enterpriseAttestationRPIDs = enterpriseAttestationRPIDs
            self.credentialManagementEnumerationWindow = credentialManagementEnumerationWindow
        }

        /// Whether authenticatorClientPIN is offered at all.
        var supportsClientPIN: Bool { !pinUvAuthProtocols.isEmpty }
        /// Whether a non-discoverable credential may be made without user verification
        /// (`makeCredUvNotRqd`, CTAP 2.1 §6.1.2 step 7).
        var makeCredentialUVNotRequired: Bool { options["makeCredUvNotRqd"] == true }
        /// The pinUvAuthToken timers.
        var tokenLimits: PINUVAuthTokenState.Limits {
            .init(
                initialUsage: tokenInitialUsageTimeLimit, userPresent: tokenUserPresentTimeLimit,
                maxUsage: tokenMaxUsageTimePeriod)
        }
        /// Permissions a token from the PIN or from built-in UV may carry: those of the features
        /// getInfo's options offer (CTAP 2.1 §6.5.5.7.2 step 4, §6.5.5.7.3 step 4), as each
        /// command's handler states them (``CommandHandler/grants``).
        func grantablePermissions(usingUV: Bool) -> PINUVAuthPermissions {
            CommandHandler.all.reduce(into: []) { $0.formUnion($1.grants(self, usingUV)) }
        }

        /// Whether a token may carry mc and ga: always from built-in UV, from the PIN unless
        /// `noMcGaPermissionsWithClientPin` (CTAP 2.1 §6.5.5.7.2 step 4).
        func grantsMakeCredentialAndGetAssertion(usingUV: Bool) -> Bool {
            usingUV || options["noMcGaPermissionsWithClientPin"] != true
        }

        /// Whether authenticatorCredentialManagement (`credMgmt`, command 0x0A) or its
        /// FIDO_2_1_PRE form (`credentialMgmtPreview`, command 0x41) is offered.
        var supportsCredentialManagement: Bool {
            options["credMgmt"] == true || options["credentialMgmtPreview"] == true
        }
        /// Whether authenticatorConfig is offered (`authnrCfg`, CTAP 2.1 §6.11).
        var supportsAuthenticatorConfig: Bool { options["authnrCfg"] == true }
        /// Whether authenticatorConfig setMinPINLength is offered (`setMinPINLength`).
        var supportsSetMinPINLength: Bool { options["setMinPINLength"] == true }
        /// Whether the alwaysUv feature exists (the option is present); its value is the
        /// initial setting, which toggleAlwaysUv then changes in the state.
        var supportsAlwaysUV: Bool { options["alwaysUv"] != nil }
        /// Whether the key is enterprise attestation capable (the `ep` option is present); its
        /// value says whether enterprise attestation starts enabled (CTAP 2.1 §7.1).
        var supportsEnterpriseAttestation: Bool { options["ep"] != nil }
        /// Whether getInfo's `pinUvAuthToken` option and the permission-carrying token
        /// subcommands are offered: always with clientPIN, unless the option is set to false
        /// (a CTAP 2.0 or FIDO_2_1_PRE key).
        var supportsPINUVAuthTokenCommands: Bool { supportsClientPIN && options["pinUvAuthToken"] != false }
        /// Whether getInfo is a CTAP 2.1 one (versions lists FIDO_2_1), which adds members such
        /// as remainingDiscoverableCredentials.
        var isCTAP21: Bool { versions.contains("FIDO_2_1") }

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
            if Set(algorithms).count != algorithms.count {
                throw VirtualKeyError(.invalidConfiguration, "An algorithm is listed twice.")
            }
            if let large = algorithms.first(where: \.needsLargeMessages), maxMsgSize < COSEAlgorithm.largeMessageSize {
                throw VirtualKeyError(
                    .invalidConfiguration,
                    "\(large) replies need a maxMsgSize of \(COSEAlgorithm.largeMessageSize), not \(maxMsgSize).")
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
            for version in pinUvAuthProtocols where PINProtocol(rawValue: UInt64(max(version, 0))) == nil {
                throw VirtualKeyError(
                    .invalidConfiguration,
                    "PIN/UV auth protocol \(version) is not implemented (only 1 and 2 are).")
            }
            if Set(pinUvAuthProtocols).count != pinUvAuthProtocols.count {
                throw VirtualKeyError(.invalidConfiguration, "A PIN/UV auth protocol is listed twice.")
            }
            if !(4...63).contains(minPINLength) {
                throw VirtualKeyError(.invalidConfiguration, "minPINLength must be between 4 and 63.")
            }
            try ctap22.validate()
            if !(1...25).contains(maxUVRetries) {
                throw VirtualKeyError(.invalidConfiguration, "maxUVRetries must be between 1 and 25.")
            }
            if tokenInitialUsageTimeLimit <= .zero || tokenUserPresentTimeLimit <= .zero
                || tokenMaxUsageTimePeriod <= .zero
            {
                throw VirtualKeyError(.invalidConfiguration, "pinUvAuthToken time limits must be positive.")
            }
            if maxRPIDsForSetMinPINLength < 0 || credentialManagementEnumerationWindow <= .zero {
                throw VirtualKeyError(
                    .invalidConfiguration,
                    "maxRPIDsForSetMinPINLength and the enumeration window must not be negative.")
            }
            try validateExtensions()
            if persistentPINUVAuthToken && !(supportsClientPIN && options["credMgmt"] == true) {
                throw VirtualKeyError(
                    .invalidConfiguration,
                    "The persistent PinUvAuthToken needs a PIN/UV auth protocol and the credMgmt option.")
            }
            try fingerprintSensor?.validate()
            if maxSerializedLargeBlobArray < VirtualKey.minimumMaxSerializedLargeBlobArray {
                throw VirtualKeyError(
                    .invalidConfiguration, "maxSerializedLargeBlobArray must be at least 1024 (CTAP 2.1 §6.4).")
            }
            if let pin {
                if !supportsClientPIN {
                    throw VirtualKeyError(
                        .invalidConfiguration, "A PIN needs at least one PIN/UV auth protocol.")
                }
                // The PIN itself never appears in a message.
                if PINPolicy.check(Array(pin.utf8), minLength: minPINLength) != nil {
                    throw VirtualKeyError(
                        .invalidConfiguration,
                        "The configured PIN must have \(minPINLength) to 63 bytes' worth of characters.")
                }
                if let reason = ctap22.pinRefusal(Array(pin.utf8)) {
                    throw VirtualKeyError(.invalidConfiguration, "The configured PIN is refused: \(reason)")
                }
            }

        }
    }
}

extension VirtualKey.Configuration {
    /// The checks ``validate()`` makes of ``extensions`` and ``maxCredBlobLength``.
    func validateExtensions() throws(VirtualKeyError) {
        for name in extensions ?? [] where !ExtensionIdentifier.implemented.contains(name) {
            throw VirtualKeyError(.invalidConfiguration, "The extension \(name) is not implemented.")
        }
        let list = effectiveExtensions
        if (list.contains(ExtensionIdentifier.hmacSecret)
            || list.contains(ExtensionIdentifier.hmacSecretMakeCredential))
            && !supportsClientPIN
        {
            throw VirtualKeyError(
                .invalidConfiguration, "hmac-secret needs a PIN/UV auth protocol for its shared secret.")
        }
        if list.contains(ExtensionIdentifier.hmacSecretMakeCredential)
            && !list.contains(ExtensionIdentifier.hmacSecret)
        {
            throw VirtualKeyError(.invalidConfiguration, "hmac-secret-mc needs hmac-secret.")
        }
        // CTAP 2.1 §6.4: maxCredBlobLength, when credBlob is supported, is at least 32.
        if maxCredBlobLength < 32 || maxCredBlobLength > 4096 {
            throw VirtualKeyError(.invalidConfiguration, "maxCredBlobLength must be between 32 and 4096.")
        }
    }
}
