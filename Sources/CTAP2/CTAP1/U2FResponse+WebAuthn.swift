import CBOR

extension U2FRegistrationResponse {
    /// The new credential's public key as a COSE EC2 P-256 key with alg ES256, built from the
    /// 65-byte uncompressed point (CTAP 2.1 §10.2.1 step 3).
    public var credentialPublicKey: COSEKey {
        get throws(CTAP2Error) {
            let x = Array(userPublicKey[1..<33])
            let y = Array(userPublicKey[33..<65])
            let map: CBORMap = [
                COSEKey.Label.keyType: .int(COSEKeyType.ec2.rawValue),
                COSEKey.Label.algorithm: .int(COSEAlgorithm.es256.rawValue),
                COSEKey.Label.curve: .int(COSECurve.p256.rawValue),
                COSEKey.Label.x: .byteString(x),
                COSEKey.Label.y: .byteString(y),
            ]
            return try COSEKey(map: map)
        }
    }

    /// The WebAuthn attestation object a CTAP2 makeCredential would have returned (CTAP 2.1
    /// §10.2.1, WebAuthn L3 §8.6): format `fido-u2f` with `sig` and `x5c` [certificate], and
    /// authenticator data rpIdHash ‖ flags UP|AT ‖ counter 0 ‖ zero AAGUID ‖ credential ID
    /// length ‖ key handle ‖ COSE key.
    public func attestationObject(rpIDHash: [UInt8]) throws(CTAP2Error) -> AttestationObject {
        guard rpIDHash.count == 32 else { throw .invalidRequest("An RP ID hash is 32 bytes.") }
        var bytes = rpIDHash
        let flags: AuthenticatorData.Flags = [.userPresent, .attestedCredentialData]
        bytes.append(flags.rawValue)
        bytes += [0, 0, 0, 0]
        bytes += [UInt8](repeating: 0, count: 16)
        bytes += [UInt8(keyHandle.count >> 8), UInt8(truncatingIfNeeded: keyHandle.count)]
        bytes += keyHandle
        bytes += try credentialPublicKey.cborEncoded
        let statement: CBORMap = [
            "sig": .byteString(signature),
            "x5c": .array([.byteString(attestationCertificate)]),
        ]
        return AttestationObject(
            format: .fidoU2F, authData: try AuthenticatorData(bytes: bytes), attestationStatement: statement)
    }
}

extension U2FAuthenticationResponse {
    /// The WebAuthn authenticator data for this response (CTAP 2.1 §10.3): rpIdHash ‖ flags ‖
    /// counter, where flags keeps bits 0 (UP) and 1 of the user presence byte and clears the
    /// rest.
    ///
    /// A U2F key may set other bits of its presence byte (U2F gives them no meaning); §10.3 says
    /// to clear them rather than refuse the reply, so they never read as AT, ED, UV or BE/BS.
    /// The signature covers the raw byte (``flags``), so when it has other bits set the
    /// signature does not verify over this authenticator data: that is the spec's conversion.
    public func authenticatorData(rpIDHash: [UInt8]) throws(CTAP2Error) -> AuthenticatorData {
        guard rpIDHash.count == 32 else { throw .invalidRequest("An RP ID hash is 32 bytes.") }
        return try AuthenticatorData(bytes: rpIDHash + [flags & Self.convertedFlagBits] + counterBytes)
    }

    /// The presence-byte bits §10.3 copies into the authenticator data flags: 0 (UP) and 1.
    static let convertedFlagBits: UInt8 = 0b0000_0011
}
