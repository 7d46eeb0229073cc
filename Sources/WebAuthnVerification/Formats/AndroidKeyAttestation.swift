import CBOR
import CTAP2
import X509

/// The android-key attestation statement format (WebAuthn §8.4).
enum AndroidKeyAttestation {
    static func verify(
        _ statement: CBORMap, authData: AuthenticatorData, credential: AttestedCredentialData,
        clientDataHash: [UInt8]
    ) throws(WebAuthnVerificationError) -> AttestationVerification {
        let r = StatementReader(statement, "android-key attestation statement")
        let algorithm = COSEAlgorithm(rawValue: try r.int("alg"))
        let signature = try r.bytes("sig")
        guard let certificates = try AttestationCertificates.parse(statement) else { throw r.missing("x5c") }
        let leaf = certificates[0]
        try AttestationCertificates.signatureKey(of: leaf)
            .verifySignature(signature, for: authData.bytes + clientDataHash, algorithm: algorithm)
        try AttestationCertificates.checkCredentialKey(leaf, credential.credentialPublicKey)
        guard let ext = leaf.extensions[oid: AndroidKeyDescription.extensionOID] else {
            throw WebAuthnVerificationError(
                .invalidCertificate, "The android-key certificate lacks the key attestation extension.")
        }
        let description = try AndroidKeyDescription(derEncoded: Array(ext.value))
        guard description.attestationChallenge == clientDataHash else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The Android attestation challenge is not the client data hash.")
        }
        let lists = [description.softwareEnforced, description.teeEnforced]
        guard !lists.contains(where: \.allApplications) else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The Android key is usable by all applications, not scoped to the RP ID.")
        }
        // origin and purpose are judged on the union of both lists (WebAuthn §8.4 lets a
        // relying party accept software keys); a key that states them must state
        // KM_ORIGIN_GENERATED and KM_PURPOSE_SIGN. Lists that state neither (the W3C test
        // vector's) pass: stricter relying parties check ``AndroidKeyDescription`` themselves.
        let origins = lists.compactMap(\.origin)
        guard origins.allSatisfy({ $0 == AndroidKeyDescription.originGenerated }) else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The Android key was not generated in the keystore (origin).")
        }
        let purposes = lists.reduce(into: Set<Int>()) { $0.formUnion($1.purposes) }
        guard purposes.isEmpty || purposes.contains(AndroidKeyDescription.purposeSign) else {
            throw WebAuthnVerificationError(
                .verificationFailed, "The Android key's purposes do not include signing.")
        }
        return AttestationVerification(type: .basic, trustPath: certificates)
    }
}
