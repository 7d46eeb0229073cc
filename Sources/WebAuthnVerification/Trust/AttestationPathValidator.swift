import CTAP2
import FoundationEssentials
import SwiftASN1
import X509

/// An attestation certificate path that was built and verified: the attestation certificate
/// first, then the intermediates used, then the trust anchor it ends in.
public struct ValidatedAttestationPath: Sendable, Hashable {
    /// The path, leaf first, anchor last.
    public var certificates: [Certificate]
    /// The trust anchor the path ends in.
    public var anchor: Certificate
}

/// Builds and verifies attestation certificate paths with swift-certificates' `Verifier`:
/// RFC 5280 path rules (signatures, validity at ``validationTime``, basic and name
/// constraints) and a FIDO policy for the statement format (WebAuthn §8.2.1, §8.3.1, §8.4,
/// §8.5, §8.8). The intermediates are the statement's x5c after its first certificate.
public struct AttestationPathValidator: Sendable {
    /// The moment certificates must be valid at; `nil` checks as of the time of validation.
    public var validationTime: Date?

    /// Creates a validator checking validity at `validationTime` (now when `nil`).
    public init(validationTime: Date? = nil) { self.validationTime = validationTime }

    /// Builds a path from the attestation certificate of `evidence` to one of `anchors`;
    /// throws ``WebAuthnVerificationError/Code/attestationCertificateMissing`` for an
    /// attestation with no certificate and ``WebAuthnVerificationError/Code/untrustedAttestation``
    /// when no path verifies (the message says why the nearest candidate failed).
    public func validate(
        _ evidence: AttestationEvidence, anchors: [Certificate]
    ) async throws(WebAuthnVerificationError) -> ValidatedAttestationPath {
        guard let leaf = evidence.statement.trustPath.first else {
            throw WebAuthnVerificationError(
                .attestationCertificateMissing,
                "The \(evidence.format) attestation carries no certificate to check against a trust anchor.")
        }
        guard !anchors.isEmpty else {
            throw WebAuthnVerificationError(.untrustedAttestation, "No trust anchors were given.")
        }
        let outcome = await CertificatePathBuilder.build(
            leaf: leaf, intermediates: Array(evidence.statement.trustPath.dropFirst()), anchors: anchors,
            at: validationTime ?? Date(), policy: FIDOAttestationCertificatePolicy(format: evidence.format))
        switch outcome {
        case .valid(let chain):
            guard let anchor = chain.last else {
                throw WebAuthnVerificationError(.untrustedAttestation, "The attestation path is empty.")
            }
            return ValidatedAttestationPath(certificates: chain, anchor: anchor)
        case .expired(let certificate):
            throw WebAuthnVerificationError(
                .untrustedAttestation,
                "The \(evidence.format) attestation path is outside its validity period at the verification time (\(certificate.nameForMessages)).")
        case .invalid(let reason):
            throw WebAuthnVerificationError(
                .untrustedAttestation,
                "The \(evidence.format) attestation certificate does not lead to a trust anchor: \(reason).")
        }
    }
}

/// The FIDO rules for an attestation certificate path, per statement format, on top of RFC 5280.
struct FIDOAttestationCertificatePolicy: VerifierPolicy {
    let format: AttestationFormat

    /// certificatePolicies (RFC 5280 §4.2.1.4).
    static let certificatePolicies: ASN1ObjectIdentifier = [2, 5, 29, 32]

    /// A tpm AIK certificate with an empty subject carries a critical subject alternative
    /// name (RFC 5280 §4.2.1.6; its TPM attributes are checked with the statement), may mark
    /// its extended key usage critical (checked below), and Microsoft's mark their certificate
    /// policies critical: WebAuthn sets no policy requirement, so any policy is accepted, as
    /// an initial-policy-set of anyPolicy would.
    var verifyingCriticalExtensions: [ASN1ObjectIdentifier] {
        format == .tpm
            ? [.X509ExtensionID.subjectAlternativeName, .X509ExtensionID.extendedKeyUsage, Self.certificatePolicies]
            : []
    }

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let leaf = chain.leaf
        if chain.count > 1 {
            // An attestation certificate is an end entity (§8.2.1, §8.3.1).
            if case .some(.isCertificateAuthority) = try? leaf.extensions.basicConstraints {
                return .failsToMeetPolicy(reason: "The attestation certificate is a CA certificate.")
            }
        }
        switch format {
        case .tpm:
            guard let usage = try? leaf.extensions.extendedKeyUsage,
                usage.contains(ExtendedKeyUsage.Usage(oid: TPMAttestation.aikCertificateUsage))
            else { return .failsToMeetPolicy(reason: "The AIK certificate lacks tcg-kp-AIKCertificate.") }
        case .androidKey:
            guard leaf.extensions[oid: AndroidKeyDescription.extensionOID] != nil else {
                return .failsToMeetPolicy(reason: "The Android attestation certificate lacks its key description.")
            }
        case .apple:
            guard leaf.extensions[oid: AppleAttestation.nonceExtension] != nil else {
                return .failsToMeetPolicy(reason: "The Apple attestation certificate lacks its nonce extension.")
            }
        case .androidSafetyNet:
            guard AndroidSafetyNetAttestation.issuedToAttestationHost(leaf) else {
                return .failsToMeetPolicy(reason: "The SafetyNet certificate is not for attest.android.com.")
            }
        default:
            break
        }
        return .meetsPolicy
    }
}
