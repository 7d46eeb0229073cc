import Authenticators
import FoundationEssentials
import Transport
import WebAuthnVerification

/// One inventory run (`securitykey fleet`): the keys found, each inspected and judged against
/// the metadata, the policy and (with an attestation check) its trust anchors, and what the run
/// took. Everything a report needs is here; printing it is the caller's.
public struct FleetRun: Sendable {
    /// One row per key, in the order the keys were listed.
    public var rows: [FleetRow]
    /// The policy the keys were judged against; nil without one.
    public var policy: FleetPolicy?
    /// Whether each key's attestation was checked.
    public var attested: Bool
    /// The metadata the keys were looked up in.
    public var metadata: FleetMetadata
    /// When the run ended.
    public var finishedAt: Date
    /// How long the run took.
    public var duration: Duration
    /// Why listing the keys was refused somewhere (a hidraw node without permission), if it was.
    public var listingProblem: AuthenticatorError?

    /// The rows of keys that fail the policy (none without a policy).
    public var failing: [FleetRow] { rows.filter { $0.ruleViolations?.isEmpty == false } }

    /// A run of `rows`, judged against `policy` (and attestation, when `attested`) with
    /// `metadata`, that ended at `finishedAt` after `duration`.
    public init(
        rows: [FleetRow], policy: FleetPolicy?, attested: Bool, metadata: FleetMetadata, finishedAt: Date,
        duration: Duration, listingProblem: AuthenticatorError? = nil
    ) {
        self.rows = rows
        self.policy = policy
        self.attested = attested
        self.metadata = metadata
        self.finishedAt = finishedAt
        self.duration = duration
        self.listingProblem = listingProblem
    }

    /// The keys a run inspects: only `uri` when one is given; else every key `inventory` lists
    /// and each of `configured` (UDP endpoints the user named) it does not, with the first
    /// permission failure met while listing.
    public static func devices(
        _ inventory: FleetInventory, uri: String?, configured: [DeviceDescriptor]
    ) async -> (devices: [DeviceDescriptor], denied: AuthenticatorError?) {
        if let uri {
            let scheme = uri.firstIndex(of: ":").map { String(uri[..<$0]) } ?? uri
            return ([DeviceDescriptor(uri: uri, transport: TransportKind(rawValue: scheme))], nil)
        }
        return await inventory.devices(including: configured)
    }

    /// Inspects `devices` with `inventory` and judges each key against `metadata`, `policy`
    /// and, when the inventory checks attestation, `anchors` (else the metadata's roots) and the
    /// CRLs its path names (a failure to check them fails the key when `requiresRevocation`); each
    /// row goes to `each` as soon as it is ready. `overall` bounds the whole run.
    public static func run(
        _ devices: [DeviceDescriptor], inventory: FleetInventory, metadata: FleetMetadata,
        policy: FleetPolicy?,
        anchors: AttestationTrustAnchors?, requiresRevocation: Bool = false, overall: Deadline,
        each: (FleetRow) async -> Void = { _ in }
    ) async -> FleetRun {
        let clock = ContinuousClock()
        let started = clock.now
        let attest = inventory.attestation != nil
        var rowsByURI: [String: FleetRow] = [:]
        let reports = await inventory.inspect(devices, overall: overall) { report in
            let row = await FleetRow.judging(
                report, metadata: metadata, policy: policy, anchors: anchors, attest: attest,
                requiresRevocation: requiresRevocation)
            rowsByURI[report.descriptor.uri] = row
            await each(row)
        }
        return FleetRun(
            rows: reports.compactMap { rowsByURI[$0.descriptor.uri] }, policy: policy, attested: attest,
            metadata: metadata, finishedAt: Date(), duration: clock.now - started)
    }
}

extension FleetRow {
    /// `report` judged: its model looked up in `metadata`, its attestation verified (when
    /// `attest`) against `anchors` or the metadata's roots, then the policy applied; the row
    /// says how current the metadata was when it was judged.
    public static func judging(
        _ report: FleetKeyReport, metadata: FleetMetadata, policy: FleetPolicy?,
        anchors: AttestationTrustAnchors?, attest: Bool, requiresRevocation: Bool = false
    ) async -> FleetRow {
        // The CRLs the attestation path names are fetched and checked (Docs/Metadata.md).
        let verdict =
            attest
            ? await FleetAttestationVerdict.judge(
                report, metadata: metadata.payload, anchors: anchors, revocation: RevocationChecker(),
                requiresRevocation: requiresRevocation) : nil
        return FleetRow(
            report: report, metadata: metadata.payload, policy: policy, attestation: verdict,
            metadataCache: metadata.status(at: Date()))
    }
}
