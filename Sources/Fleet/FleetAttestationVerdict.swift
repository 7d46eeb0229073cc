import CBOR
import Authenticators
import CBOR
import CTAP2
import FoundationEssentials
import WebAuthnVerification

/// What a fleet attestation check (`securitykey fleet --attest`) concluded of one key's throwaway registration: whether the attestation
/// statement verifies, and whether its certificate path leads to a trusted root (the model's
/// MDS roots, or the caller's anchors).
public struct FleetAttestationVerdict: Sendable {
    /// The statement format (`packed`, `fido-u2f`, ...).
    public var format: String?
    /// basic, attCA, self, none ...
    public var type: String?
    /// Whether the statement's signature and format rules verified.
    public var statementVerified = false
    /// Whether the path chains to a trusted root; nil when nothing was there to chain to.
    public var trusted: Bool?
    /// The root the path ends in.
    public var anchor: String?
    /// Why the key is not proven genuine; nil when it is.
    public var problem: String?
    /// The stable code of the verification error behind ``problem`` (`certificate-revoked`,
    /// `revocation-not-checked`, `untrusted-attestation`, ...), when one was.
    public var problemCode: String?
    /// What checking the path against the CRLs its certificates name found; nil when no path
    /// was checked.
    public var revocation: RevocationCheck?

    /// Genuine: the statement verified and chains to a trusted root.
    public var isGenuine: Bool { statementVerified && trusted == true && problem == nil }

    /// A verdict with nothing concluded yet.
    public init() {}

    /// Judges `report`'s sample against `anchors` when given, else against `metadata`; with
    /// `revocation`, also against the CRLs the path names (a revoked certificate is not genuine,
    /// nor, when `requiresRevocation`, one whose CRLs could not be checked).
    public static func judge(
        _ report: FleetKeyReport, metadata: MetadataBLOBPayload?, anchors: AttestationTrustAnchors?,
        revocation: RevocationChecker? = nil, requiresRevocation: Bool = false
    ) async -> FleetAttestationVerdict? {
        var verdict = FleetAttestationVerdict()
        guard let sample = report.attestationSample else {
            guard let problem = report.attestationProblem else { return nil }
            verdict.problem = problem.message
            return verdict
        }
        let object = sample.response.attestationObject
        verdict.format = object.format.rawValue
        let statement: AttestationVerification
        do {
            statement = try object.verify(clientDataHash: sample.clientDataHash)
        } catch {
            verdict.problem = "The attestation statement does not verify: \(error.message)"
            verdict.problemCode = error.code.rawValue
            return verdict
        }
        verdict.statementVerified = true
        verdict.type = statement.type.rawValue
        guard let aaguid = object.authData.attestedCredentialData?.aaguid else {
            verdict.problem = "The registration carries no attested credential."
            return verdict
        }
        if let claimed = report.info?.aaguid, claimed != aaguid, statement.type != .none {
            verdict.problem = "The attested AAGUID \(aaguid) is not the one getInfo reports (\(claimed))."
            return verdict
        }
        let policy: (any AttestationTrustPolicy)?
        if let anchors {
            policy = CertificatePathAttestationTrust(
                anchors: anchors, revocation: revocation, requiresRevocation: requiresRevocation)
        } else if let metadata {
            policy = MetadataAttestationTrust(
                metadata: metadata, authenticatorVersion: report.info?.firmwareVersion, revocation: revocation,
                requiresRevocation: requiresRevocation)
        } else {
            policy = nil
        }
        guard let policy else {
            verdict.problem = "No trust anchors: run `securitykey mds update` or give --trust-root."
            return verdict
        }
        do {
            let trust = try await policy.evaluate(
                AttestationEvidence(format: object.format, aaguid: aaguid, statement: statement))
            verdict.trusted = trust.trustAnchor != nil
            verdict.anchor = trust.trustAnchor.map { "\($0.subject)" }
            verdict.revocation = trust.revocation
            if trust.trustAnchor == nil { verdict.problem = "The attestation names no certificate to trust." }
        } catch {
            verdict.trusted = false
            verdict.problem = error.message
            verdict.problemCode = error.code.rawValue
        }
        return verdict
    }

    /// The `attestation` member of a fleet row's JSON.
    public var json: JSONValue {
        .members([
            ("genuine", .bool(isGenuine)),
            ("format", format.map(JSONValue.string) ?? .null),
            ("type", type.map(JSONValue.string) ?? .null),
            ("statementVerified", .bool(statementVerified)),
            ("trusted", trusted.map(JSONValue.bool) ?? .null),
            ("anchor", anchor.map(JSONValue.string) ?? .null),
            ("problem", problem.map(JSONValue.string) ?? .null),
            ("problemCode", problemCode.map(JSONValue.string) ?? .null),
            ("revocation", revocation?.json),
        ])
    }
}
