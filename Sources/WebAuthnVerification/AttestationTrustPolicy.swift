import CTAP2
import FoundationEssentials
import X509

/// What the trust policy is shown of a verified attestation statement: enough to look the
/// authenticator up (AAGUID, format) and to judge its certificates.
public struct AttestationEvidence: Sendable, Hashable {
    /// The attestation statement format.
    public var format: AttestationFormat
    /// The authenticator model's AAGUID, from the attested credential data.
    public var aaguid: AAGUID
    /// What verifying the statement established: its type and trust path.
    public var statement: AttestationVerification

    /// Creates evidence from its parts.
    public init(format: AttestationFormat, aaguid: AAGUID, statement: AttestationVerification) {
        self.format = format
        self.aaguid = aaguid
        self.statement = statement
    }
}

/// How far a relying party trusts an attestation (WebAuthn §7.1 steps 22-23).
public struct AttestationTrust: Sendable, Hashable {
    /// The attestation type.
    public var type: AttestationType
    /// The attestation certificate first, then its chain as sent (x5c); empty for none and self.
    public var trustPath: [Certificate]
    /// The trust anchor the trust path was found to lead to; `nil` when none was consulted.
    public var trustAnchor: Certificate?
    /// The certificate path that was built and verified, attestation certificate first and
    /// ``trustAnchor`` last; empty when no anchor was consulted.
    public var certificatePath: [Certificate]
    /// Whether the attestation is an enterprise attestation (see
    /// ``AttestationVerification/isEnterprise``).
    public var isEnterprise: Bool
    /// What checking ``certificatePath`` against the CRLs its certificates name found; nil when
    /// the policy was not asked to.
    public var revocation: RevocationCheck?

    /// Creates a trust decision from its parts.
    public init(
        type: AttestationType, trustPath: [Certificate], trustAnchor: Certificate? = nil,
        certificatePath: [Certificate] = [], isEnterprise: Bool = false, revocation: RevocationCheck? = nil
    ) {
        self.revocation = revocation
        self.type = type
        self.trustPath = trustPath
        self.trustAnchor = trustAnchor
        self.certificatePath = certificatePath
        self.isEnterprise = isEnterprise
    }
}

/// The seam for attestation trust (WebAuthn §7.1 step 22, "obtain a list of acceptable trust
/// anchors"): a policy that judges a verified attestation statement and either returns the
/// trust it established or throws ``WebAuthnVerificationError/Code/untrustedAttestation``.
/// A FIDO Metadata Service policy plugs in here.
public protocol AttestationTrustPolicy: Sendable {
    /// Judges `evidence`; throws when the relying party must not accept it.
    func evaluate(_ evidence: AttestationEvidence) async throws(WebAuthnVerificationError) -> AttestationTrust
}

/// Reports the attestation type (none, self or basic) and trust path as verified, without
/// consulting any trust anchor: the caller decides what to make of them.
public struct UnanchoredAttestationTrust: AttestationTrustPolicy {
    /// Creates the policy.
    public init() {}

    /// Returns the statement's type and trust path with no anchor.
    public func evaluate(_ evidence: AttestationEvidence) async throws(WebAuthnVerificationError)
        -> AttestationTrust
    {
        AttestationTrust(
            type: evidence.statement.type, trustPath: evidence.statement.trustPath,
            isEnterprise: evidence.statement.isEnterprise)
    }
}

/// Requires the attestation trust path to lead to one of a set of trust anchors: the path is
/// built and verified by an ``AttestationPathValidator`` (RFC 5280 and the FIDO rules of the
/// statement's format, validity at ``validationTime``), and the anchor and path used are
/// reported. Attestations without a certificate (none, self) are refused.
public struct CertificatePathAttestationTrust: AttestationTrustPolicy {
    /// The trust anchors.
    public var anchors: AttestationTrustAnchors
    /// The moment certificates must be valid at; `nil` checks as of now.
    public var validationTime: Date?
    /// Fetches and checks the CRLs the path's certificates name; nil checks none.
    public var revocation: RevocationChecker?
    /// Whether a path whose revocation could not be checked is refused.
    public var requiresRevocation: Bool

    /// Creates the policy with its anchors and validation time.
    public init(
        anchors: AttestationTrustAnchors, validationTime: Date? = nil, revocation: RevocationChecker? = nil,
        requiresRevocation: Bool = false
    ) {
        self.anchors = anchors
        self.validationTime = validationTime
        self.revocation = revocation
        self.requiresRevocation = requiresRevocation
    }

    /// Builds and verifies the path to an anchor.
    public func evaluate(_ evidence: AttestationEvidence) async throws(WebAuthnVerificationError)
        -> AttestationTrust
    {
        let path = try await AttestationPathValidator(validationTime: validationTime)
            .validate(evidence, anchors: anchors.certificates)
        let checked = try await revocation?.check(path.certificates, at: validationTime, required: requiresRevocation)
        return AttestationTrust(
            type: evidence.statement.type, trustPath: evidence.statement.trustPath, trustAnchor: path.anchor,
            certificatePath: path.certificates, isEnterprise: evidence.statement.isEnterprise, revocation: checked)
    }
}
