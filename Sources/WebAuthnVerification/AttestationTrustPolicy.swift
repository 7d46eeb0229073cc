import CTAP2
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

    /// Creates a trust decision from its parts.
    public init(type: AttestationType, trustPath: [Certificate], trustAnchor: Certificate? = nil) {
        self.type = type
        self.trustPath = trustPath
        self.trustAnchor = trustAnchor
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
        AttestationTrust(type: evidence.statement.type, trustPath: evidence.statement.trustPath)
    }
}

/// Requires the attestation certificate to be issued directly by one of the given roots (its
/// issuer is the root's subject and the root's key signed it). No chain building, validity
/// period or revocation checks: those belong to a fuller policy.
public struct DirectIssuerAttestationTrust: AttestationTrustPolicy {
    /// The certificates an attestation certificate may be issued by.
    public var roots: [Certificate]

    /// Creates the policy with its roots.
    public init(roots: [Certificate]) { self.roots = roots }

    /// Finds the root that issued the attestation certificate.
    public func evaluate(_ evidence: AttestationEvidence) async throws(WebAuthnVerificationError)
        -> AttestationTrust
    {
        guard let leaf = evidence.statement.trustPath.first else {
            throw WebAuthnVerificationError(
                .attestationCertificateMissing,
                "The attestation carries no certificate to check against a root.")
        }
        for root in roots where leaf.issuer == root.subject {
            if root.publicKey.isValidSignature(leaf.signature, for: leaf) {
                return AttestationTrust(
                    type: evidence.statement.type, trustPath: evidence.statement.trustPath, trustAnchor: root)
            }
        }
        throw WebAuthnVerificationError(
            .untrustedAttestation, "The attestation certificate was not issued by a trusted root.")
    }
}
