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
