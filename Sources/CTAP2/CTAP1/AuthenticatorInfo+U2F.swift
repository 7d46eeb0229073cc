import CBOR

extension AuthenticatorInfo {
    /// Whether the key lists a CTAP2 version (`FIDO_2_0`, `FIDO_2_1_PRE`, `FIDO_2_1`, ...).
    public var supportsCTAP2: Bool { versions.contains { $0.rawValue.hasPrefix("FIDO_2_") } }

    /// Whether the key is used through CTAP1/U2F only: it lists `U2F_V2` and no CTAP2 version.
    public var isU2FOnly: Bool { supportsU2F && !supportsCTAP2 }

    /// What a key that answers U2F_VERSION but not authenticatorGetInfo is taken to support:
    /// versions `U2F_V2`, a zero AAGUID, no discoverable credentials, no PIN, no built-in UV
    /// (U2F has none of them).
    public static func u2fOnly() throws(CTAP2Error) -> AuthenticatorInfo {
        try AuthenticatorInfo(map: [
            Key.versions: [.textString(AuthenticatorVersion.u2fV2.rawValue)],
            Key.aaguid: .byteString([UInt8](repeating: 0, count: 16)),
            Key.options: .map([
                .textString(AuthenticatorOption.residentKey.rawValue): false,
                .textString(AuthenticatorOption.userPresence.rawValue): true,
            ]),
            Key.algorithms: [.map(["type": "public-key", "alg": .int(COSEAlgorithm.es256.rawValue)])],
        ])
    }
}
