import _SecurityKeyInternals
import CTAP2
import FoundationEssentials
import X509

/// An attestation trust policy backed by the FIDO Metadata Service (FIDO MDS3 §3.2, WebAuthn
/// §7.1 steps 22-23): finds the authenticator model by AAGUID, or by the key identifier of its
/// attestation certificate, refuses the statuses the relying party refuses, and requires the
/// attestation certificate to chain (at the verification time) to the model's
/// `attestationRootCertificates` or to one of the extra anchors given.
public struct MetadataAttestationTrust: AttestationTrustPolicy {
    /// The verified metadata.
    public var metadata: MetadataBLOBPayload
    /// Anchors trusted besides the metadata's, for models not (yet) listed.
    public var additionalAnchors: [Certificate]
    /// Statuses that make a model unacceptable; ``AuthenticatorStatus/refusedByDefault`` by default.
    public var refusedStatuses: Set<AuthenticatorStatus>
    /// The moment certificates are checked at; nil means now.
    public var verifyTime: Date?
    /// Whether a model missing from the metadata is refused even when an additional anchor
    /// would vouch for it.
    public var requiresMetadataEntry: Bool
    /// The firmware version of the authenticator judged (getInfo's firmwareVersion), when the
    /// caller knows it: status reports that concern other firmware are then set aside (see
    /// ``MetadataBLOBPayloadEntry/statusHistory(forFirmware:)``). Nil applies every report.
    public var authenticatorVersion: UInt64?
    /// Fetches and checks the CRLs the attestation path's certificates name; nil checks none.
    public var revocation: RevocationChecker?
    /// Whether a path whose revocation could not be checked is refused.
    public var requiresRevocation: Bool

    /// Creates the policy over verified metadata.
    public init(
        metadata: MetadataBLOBPayload, additionalAnchors: [Certificate] = [],
        refusedStatuses: Set<AuthenticatorStatus> = AuthenticatorStatus.refusedByDefault,
        verifyTime: Date? = nil,
        requiresMetadataEntry: Bool = false, authenticatorVersion: UInt64? = nil,
        revocation: RevocationChecker? = nil, requiresRevocation: Bool = false
    ) {
        self.revocation = revocation
        self.requiresRevocation = requiresRevocation
        self.authenticatorVersion = authenticatorVersion
        self.metadata = metadata
        self.additionalAnchors = additionalAnchors
        self.refusedStatuses = refusedStatuses
        self.verifyTime = verifyTime
        self.requiresMetadataEntry = requiresMetadataEntry
    }

    /// The metadata entry for the authenticator that made `evidence`: by AAGUID, else by the key
    /// identifier of its attestation certificate.
    public func entry(for evidence: AttestationEvidence) -> MetadataBLOBPayloadEntry? {
        if let entry = metadata.entry(aaguid: evidence.aaguid) { return entry }
        return evidence.statement.trustPath.first.flatMap { metadata.entry(attestationCertificate: $0) }
    }

    /// Judges `evidence` against the metadata.
    public func evaluate(_ evidence: AttestationEvidence) async throws(WebAuthnVerificationError)
        -> AttestationTrust
    {
        let entry = entry(for: evidence)
        if let entry {
            try checkStatus(entry, trustPath: evidence.statement.trustPath)
        } else if requiresMetadataEntry || additionalAnchors.isEmpty {
            throw WebAuthnVerificationError(
                .authenticatorNotInMetadata,
                "The authenticator (AAGUID \(evidence.aaguid)) is not listed in the FIDO metadata.")
        }
        guard let leaf = evidence.statement.trustPath.first else {
            throw WebAuthnVerificationError(
                .attestationCertificateMissing,
                "The attestation (\(evidence.statement.type)) carries no certificate to chain to the model's roots."
            )
        }
        let anchors = (entry?.attestationRoots ?? []) + additionalAnchors
        let outcome = await CertificatePathBuilder.build(
            leaf: leaf, intermediates: Array(evidence.statement.trustPath.dropFirst()), anchors: anchors,
            at: verifyTime ?? Date(), policy: FIDOAttestationCertificatePolicy(format: evidence.format))
        switch outcome {
        case .valid(let path):
            let checked = try await revocation?.check(path, at: verifyTime, required: requiresRevocation)
            return AttestationTrust(
                type: evidence.statement.type, trustPath: evidence.statement.trustPath, trustAnchor: path.last,
                certificatePath: path, revocation: checked)
        case .expired(let certificate):
            throw WebAuthnVerificationError(
                .untrustedAttestation,
                "The attestation certificate chain is outside its validity period at the verification time (\(certificate.nameForMessages))."
            )
        case .invalid(let reason):
            let model = entry?.description.map { " of \($0)" } ?? ""
            throw WebAuthnVerificationError(
                .untrustedAttestation,
                "The attestation certificate does not chain to the metadata's attestation roots\(model): \(reason)."
            )
        }
    }

    /// Refuses the model when a refused status applies. A report naming a certificate (a
    /// compromised attestation key) applies only when that certificate is in the trust path.
    private func checkStatus(_ entry: MetadataBLOBPayloadEntry, trustPath: [Certificate])
        throws(WebAuthnVerificationError)
    {
        for report in entry.statusHistory(forFirmware: authenticatorVersion)
        where refusedStatuses.contains(report.status) {
            if let named = report.certificate {
                guard let der = Base64.decode(named, alphabet: .standard, padding: .required),
                    trustPath.contains(where: { (try? $0.serializeAsPEM().derBytes) == der })
                else { continue }
            }
            let model = entry.description ?? "the authenticator"
            let since = report.effectiveDate.map { " since \($0)" } ?? ""
            throw WebAuthnVerificationError(
                .authenticatorStatusRefused,
                "The FIDO metadata reports \(report.status) for \(model)\(since).")
        }
    }
}
