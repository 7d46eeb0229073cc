import FoundationEssentials

extension RegistrationVerifier {
    /// The attestation trust a relying party applies: the FIDO metadata's roots and refused
    /// statuses when `metadata` is given (``MetadataAttestationTrust``), else a certificate path
    /// to `anchors` (``CertificatePathAttestationTrust``), else none
    /// (``UnanchoredAttestationTrust``). Certificates are checked as of `validationTime` (nil:
    /// now), and the CRLs the path names are fetched and checked (``RevocationChecker``); a path
    /// whose revocation could not be checked is refused when `requiresRevocation`.
    public static func trustPolicy(
        metadata: MetadataBLOBPayload?, anchors: AttestationTrustAnchors?, validationTime: Date? = nil,
        requiresRevocation: Bool = false
    ) -> any AttestationTrustPolicy {
        if let metadata {
            return MetadataAttestationTrust(
                metadata: metadata, verifyTime: validationTime, revocation: RevocationChecker(),
                requiresRevocation: requiresRevocation)
        }
        guard let anchors else { return UnanchoredAttestationTrust() }
        return CertificatePathAttestationTrust(
            anchors: anchors, validationTime: validationTime, revocation: RevocationChecker(),
            requiresRevocation: requiresRevocation)
    }
}
