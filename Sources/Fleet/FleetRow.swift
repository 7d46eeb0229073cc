import Authenticators
import CBOR
import CTAP2
import Transport
import WebAuthnVerification

/// One key of a fleet inventory as it is shown: the report, what the metadata says of its
/// model, and the policy's and attestation's verdicts; rendered as JSON or as a CSV row.
public struct FleetRow: Sendable {
    /// The inspection's report.
    public var report: FleetKeyReport
    /// The model's name in the metadata.
    public var model: String?
    /// The model's certification status for the key's firmware.
    public var certification: String?
    /// The model's latest status for the key's firmware.
    public var status: String?
    /// The rules the key breaks, each with its reason; nil without a policy.
    public var ruleViolations: [FleetPolicy.Violation]?
    /// The policy's reasons; nil without a policy.
    public var violations: [String]? { ruleViolations?.map(\.message) }
    /// The attestation verdict; nil when attestation was not checked.
    public var attestation: FleetAttestationVerdict?
    /// How current the metadata (MDS) cache the key was judged by was: its age and whether its
    /// nextUpdate had passed (stale); nil without a cache.
    public var metadataCache: MetadataCacheStatus?
    /// The key's device identifier in hex (its decrypted encIdentifier), when a stored
    /// persistent token fits the key: the same key gives the same identifier in every run.
    public var identifier: String? { report.identifierHex }

    /// Looks the key's model up in `metadata` and judges the report against `policy`;
    /// `metadataCache` says how current that metadata is.
    public init(
        report: FleetKeyReport, metadata: MetadataBLOBPayload?, policy: FleetPolicy?,
        attestation: FleetAttestationVerdict? = nil, metadataCache: MetadataCacheStatus? = nil
    ) {
        self.attestation = attestation
        self.metadataCache = metadataCache
        self.report = report
        let entry = report.info.flatMap { metadata?.entry(aaguid: $0.aaguid) }
        model = entry?.description
        // Status reports name the firmware they concern; the key's own version picks them.
        let firmware = report.info?.firmwareVersion
        certification = entry?.certification(forFirmware: firmware)?.status.rawValue
        status = entry?.latestStatus(forFirmware: firmware)?.status.rawValue
        ruleViolations = policy?.ruleViolations(
            of: report,
            metadata: FleetPolicy.Metadata(model: model, latestStatus: status, certification: certification))
        // With an attestation check, a key not proven genuine fails any policy.
        if ruleViolations != nil, let attestation, !attestation.isGenuine {
            ruleViolations?.append(
                FleetPolicy.Violation(
                    rule: "attestation", message: "Attestation not proven: \(attestation.problem ?? "no trusted path")."))
        }
    }

    /// Whether the model's status is one refused by default; nil without a status.
    public var statusRefused: Bool? {
        status.map { AuthenticatorStatus.refusedByDefault.contains(AuthenticatorStatus(rawValue: $0)) }
    }

    /// The row as a JSON object (field names in Docs/CLI.md).
    public var json: JSONValue {
        let d = report.descriptor
        let info = report.info
        let pin = report.pinStatus
        func ms(_ duration: Duration?) -> JSONValue { duration.map { .integer($0.wholeMilliseconds) } ?? .null }
        func int(_ value: Int?) -> JSONValue { value.map { .integer(Int64($0)) } ?? .null }
        var members: [(String, JSONValue?)] = d.jsonMembers.map { ($0.0, $0.1) } + [
            ("aaguid", info.map { .string($0.aaguid.description.lowercased()) } ?? .null),
            ("identifier", identifier.map(JSONValue.string) ?? .null),
            ("model", model.map(JSONValue.string) ?? .null),
            ("certification", certification.map(JSONValue.string) ?? .null),
            ("status", status.map(JSONValue.string) ?? .null),
            ("statusRefused", statusRefused.map(JSONValue.bool) ?? .null),
            ("firmwareVersion", info?.firmwareVersion.map(JSONValue.unsigned) ?? .null),
            ("versions", info.map { .array($0.versions.map { .string($0.rawValue) }) } ?? .null),
            ("extensions", info.map { .array($0.extensions.map { .string($0.rawValue) }) } ?? .null),
            ("algorithms", info.map { .array($0.algorithms.map { .integer(Int64($0.algorithm.rawValue)) }) } ?? .null),
            (
                "options",
                info.map { i in
                    .object(i.options.sorted { $0.key < $1.key }.map { ($0.key.rawValue, JSONValue.bool($0.value)) })
                } ?? .null
            ),
            ("pinSet", pin?.isSet.map(JSONValue.bool) ?? .null),
            ("pinRetries", int(pin?.retries)),
            ("uvRetries", int(pin?.uvRetries)),
            ("minPINLength", pin.map { .integer(Int64($0.minPINLength)) } ?? info?.minPINLength.map(JSONValue.unsigned) ?? .null),
            ("forcePINChange", info.map { .bool($0.forcePINChange == true) } ?? .null),
            (
                "remainingDiscoverableCredentials",
                info?.remainingDiscoverableCredentials.map(JSONValue.unsigned) ?? .null
            ),
            ("healthy", .bool(report.isHealthy)),
            ("getInfoMs", ms(report.health.getInfoLatency)),
            ("assertionMs", ms(report.health.assertionLatency)),
            ("assertionStatus", report.health.assertionStatus.map(JSONValue.string) ?? .null),
            ("elapsedMs", .integer(report.elapsed.wholeMilliseconds)),
            (
                "error",
                report.failure.map { .object([("code", .string($0.code.rawValue)), ("message", .string($0.message))]) }
                    ?? .null
            ),
        ]
        // Stale trust data is said in the document itself, never only on standard error.
        members.append(("metadata", metadataCache?.json ?? .null))
        if let attestation { members.append(("attestation", attestation.json)) }
        if let violations {
            members.append(
                (
                    "policy",
                    .object([
                        ("pass", .bool(violations.isEmpty)), ("reasons", .array(violations.map(JSONValue.string))),
                    ])
                ))
        }
        return .members(members)
    }

    /// The CSV column names.
    public static let csvHeader = [
        "uri", "transport", "vendorId", "productId", "manufacturer", "product", "serialNumber", "aaguid", "identifier", "model",
        "certification", "status", "statusRefused", "firmwareVersion", "versions", "extensions", "algorithms", "options",
        "pinSet", "pinRetries", "uvRetries", "minPINLength", "forcePINChange", "remainingDiscoverableCredentials",
        "healthy", "getInfoMs", "assertionMs", "assertionStatus", "elapsedMs", "errorCode", "errorMessage",
        "policyPass", "policyReasons", "attestationGenuine", "attestationFormat", "attestationType",
        "attestationStatementVerified", "attestationTrusted", "attestationAnchor", "attestationProblem",
        "metadataAgeSeconds", "metadataStale",
    ]

    /// The CSV row, in ``csvHeader`` order: lists joined with spaces, options as name=value.
    public var csvFields: [String] {
        let d = report.descriptor
        let info = report.info
        let pin = report.pinStatus
        func text<T>(_ value: T?) -> String { value.map { "\($0)" } ?? "" }
        return [
            d.uri, d.transport.rawValue, text(d.vendorID), text(d.productID), text(d.manufacturer), text(d.product),
            text(d.serialNumber), text(info.map { $0.aaguid.description.lowercased() }), text(identifier), text(model),
            text(certification), text(status), text(statusRefused), text(info?.firmwareVersion),
            text(info.map { $0.versions.map(\.rawValue).joined(separator: " ") }),
            text(info.map { $0.extensions.map(\.rawValue).joined(separator: " ") }),
            text(info.map { $0.algorithms.map { String($0.algorithm.rawValue) }.joined(separator: " ") }),
            text(info.map { $0.options.sorted { $0.key < $1.key }.map { "\($0.key.rawValue)=\($0.value)" }.joined(separator: " ") }),
            text(pin?.isSet), text(pin?.retries), text(pin?.uvRetries),
            text(pin.map(\.minPINLength) ?? info?.minPINLength.map { Int(clamping: $0) }),
            text(info.map { $0.forcePINChange == true }), text(info?.remainingDiscoverableCredentials),
            String(report.isHealthy), text(report.health.getInfoLatency?.wholeMilliseconds),
            text(report.health.assertionLatency?.wholeMilliseconds), text(report.health.assertionStatus),
            String(report.elapsed.wholeMilliseconds), text(report.failure?.code.rawValue), text(report.failure?.message),
            text(violations.map { $0.isEmpty }), text(violations?.joined(separator: " ")),
            text(attestation?.isGenuine), text(attestation?.format), text(attestation?.type),
            text(attestation?.statementVerified), text(attestation?.trusted), text(attestation?.anchor),
            text(attestation?.problem), text(metadataCache.map { Int($0.age) }), text(metadataCache?.isStale),
        ]
    }
}
