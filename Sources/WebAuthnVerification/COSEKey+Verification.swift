import CTAP2

extension COSEKey {
    /// The key as a swift-crypto public key, with CTAP2's parse errors turned into this
    /// module's (unsupported kinds stay ``WebAuthnVerificationError/Code/unsupportedAlgorithm``).
    func verificationKey() throws(WebAuthnVerificationError) -> SignaturePublicKey {
        do {
            return try publicKey()
        } catch {
            throw WebAuthnVerificationError(
                error.code == .unsupportedAlgorithm ? .unsupportedAlgorithm : .malformedInput,
                error.message, underlying: error)
        }
    }

    /// Checks `signature` over `message` with this key and its own algorithm (or `algorithm`
    /// when the key does not state one); throws ``WebAuthnVerificationError/Code/verificationFailed``
    /// when it does not verify.
    public func verifySignature(
        _ signature: [UInt8], for message: [UInt8], algorithm: COSEAlgorithm? = nil
    ) throws(WebAuthnVerificationError) {
        guard let alg = self.algorithm ?? algorithm else {
            throw WebAuthnVerificationError(
                .unsupportedAlgorithm, "The COSE key states no algorithm to verify with.")
        }
        if let algorithm, algorithm != alg {
            throw WebAuthnVerificationError(
                .verificationFailed, "The signature uses \(algorithm) but the key is for \(alg).")
        }
        try verificationKey().verifySignature(signature, for: message, algorithm: alg)
    }
}

extension GetAssertionResponse {
    /// Checks the assertion signature over authData ‖ clientDataHash with the credential's
    /// public key (WebAuthn §7.2 step 21); throws ``WebAuthnVerificationError/Code/verificationFailed``.
    public func verify(clientDataHash: [UInt8], publicKey: COSEKey) throws(WebAuthnVerificationError) {
        try publicKey.verifySignature(signature, for: authData.bytes + clientDataHash)
    }
}
