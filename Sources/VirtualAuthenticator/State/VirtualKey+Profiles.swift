extension VirtualKey.Configuration {
    /// A CTAP 2.1 key (CTAP 2.1 §6.4): versions U2F_V2, FIDO_2_0 and FIDO_2_1, with
    /// authenticatorCredentialManagement (`credMgmt`), authenticatorConfig (`authnrCfg`,
    /// `setMinPINLength`, `alwaysUv`), `makeCredUvNotRqd`, pinUvAuthTokens with permissions,
    /// and, when `enterpriseAttestation` is true, an enterprise attestation certificate of its
    /// own (`ep`, off until authenticatorConfig enableEnterpriseAttestation turns it on).
    ///
    /// - Parameters:
    ///   - aaguid: the AAGUID of a new state; nil makes a random one.
    ///   - pin: a PIN the key starts with.
    ///   - alwaysUV: the initial `alwaysUv` setting (toggleAlwaysUv changes it).
    ///   - enterpriseAttestation: whether the key is enterprise attestation capable.
    ///   - enterpriseAttestationEnabled: whether enterprise attestation starts enabled.
    ///   - builtInUV: whether the key has a (simulated) fingerprint sensor (`uv`).
    public static func ctap21(
        aaguid: [UInt8]? = nil, pin: String? = nil, alwaysUV: Bool = false,
        enterpriseAttestation: Bool = true,
        enterpriseAttestationEnabled: Bool = false, builtInUV: Bool = false
    ) -> Self {
        var options: [String: Bool] = [
            "rk": true, "up": true, "plat": false, "credMgmt": true, "authnrCfg": true,
            "setMinPINLength": true, "makeCredUvNotRqd": true, "alwaysUv": alwaysUV, "pinUvAuthToken": true,
            "largeBlobs": true,
        ]
        if enterpriseAttestation { options["ep"] = enterpriseAttestationEnabled }
        if builtInUV {
            options["uv"] = true
            options["uvAcfg"] = true
        }
        return Self(
            aaguid: aaguid, versions: ["U2F_V2", "FIDO_2_0", "FIDO_2_1"], options: options,
            firmwareVersion: 0x02_01_00, pin: pin, maxRPIDsForSetMinPINLength: 8)
    }

    /// A CTAP 2.2 key (CTAP 2.2 §6.4), reporting FIDO_2_2 and FIDO_2_3 as keys shipping now do:
    /// everything of ``ctap21(aaguid:pin:alwaysUV:enterpriseAttestation:enterpriseAttestationEnabled:builtInUV:)``
    /// plus the thirdPartyPayment and hmac-secret-mc extensions, attestationFormats (and
    /// makeCredential's attestationFormatsPreference), maxPINLength, authenticatorConfigCommands,
    /// pinComplexityPolicy (off until ``CTAP22Features/pinComplexityPolicy`` turns it on) and, with
    /// built-in UV, uvCountSinceLastPinEntry and preferredPlatformUvAttempts 3.
    public static func ctap22(
        aaguid: [UInt8]? = nil, pin: String? = nil, alwaysUV: Bool = false,
        enterpriseAttestation: Bool = true,
        enterpriseAttestationEnabled: Bool = false, builtInUV: Bool = false
    ) -> Self {
        var configuration = ctap21(
            aaguid: aaguid, pin: pin, alwaysUV: alwaysUV, enterpriseAttestation: enterpriseAttestation,
            enterpriseAttestationEnabled: enterpriseAttestationEnabled, builtInUV: builtInUV)
        configuration.versions = ["U2F_V2", "FIDO_2_0", "FIDO_2_1", "FIDO_2_2", "FIDO_2_3"]
        configuration.firmwareVersion = 0x02_03_00
        configuration.ctap22.preferredPlatformUVAttempts = 3
        configuration.persistentPINUVAuthToken = true
        return configuration
    }

    /// A key that shipped before CTAP 2.1 was final: versions U2F_V2, FIDO_2_0 and
    /// FIDO_2_1_PRE with `credentialMgmtPreview` (credential management as command 0x41,
    /// without updateUserInformation), legacy PIN tokens and no `pinUvAuthToken`.
    public static func ctap21Preview(aaguid: [UInt8]? = nil, pin: String? = nil) -> Self {
        Self(
            aaguid: aaguid, versions: ["U2F_V2", "FIDO_2_0", "FIDO_2_1_PRE"],
            options: [
                "rk": true, "up": true, "plat": false, "credentialMgmtPreview": true, "pinUvAuthToken": false,
            ],
            firmwareVersion: 0x01_02_00, pin: pin)
    }
}
