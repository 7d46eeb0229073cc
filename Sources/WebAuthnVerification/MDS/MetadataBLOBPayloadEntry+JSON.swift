import CBOR
import FoundationEssentials

extension MetadataBLOBPayloadEntry {
    /// The entry as a JSON document (what `securitykey mds show --json` prints, Docs/CLI.md):
    /// model, identifiers, certification, status history, attestation roots, and the BLOB
    /// (`blob`, whose nextUpdate has passed when `stale`) it came from.
    public func json(blob: MetadataBLOB, stale: Bool) -> JSONValue {
        let entry = self
        func report(_ r: StatusReport) -> JSONValue {
            .object([
                ("status", .string(r.status.rawValue)),
                ("effectiveDate", r.effectiveDate.map(JSONValue.string) ?? .null),
                ("certificationDescriptor", r.certificationDescriptor.map(JSONValue.string) ?? .null),
                ("certificateNumber", r.certificateNumber.map(JSONValue.string) ?? .null),
            ])
        }
        let formatter = Date.ISO8601FormatStyle()
        return .object([
            ("model", entry.description.map(JSONValue.string) ?? .null),
            ("aaguid", entry.aaguid.map { .string($0.lowercased()) } ?? .null),
            (
                "attestationCertificateKeyIdentifiers",
                .array((entry.attestationCertificateKeyIdentifiers ?? []).map { .string($0.lowercased()) })
            ),
            (
                "authenticatorVersion",
                entry.metadataStatement?.authenticatorVersion.map { .integer(Int64(clamping: $0)) } ?? .null
            ),
            ("protocolFamily", entry.metadataStatement?.protocolFamily.map(JSONValue.string) ?? .null),
            (
                "attestationTypes",
                .array((entry.metadataStatement?.attestationTypes ?? []).map(JSONValue.string))
            ),
            ("certification", entry.certification.map(report) ?? .null),
            ("status", entry.latestStatus.map { .string($0.status.rawValue) } ?? .null),
            ("statusHistory", .array(entry.statusHistory.map(report))),
            (
                "attestationRoots",
                .array(
                    entry.attestationRoots.map {
                        .object([
                            ("subject", .string($0.subject.description)),
                            ("notValidAfter", .string(formatter.format($0.notValidAfter))),
                        ])
                    })
            ),
            (
                "blob",
                .object([
                    ("no", .integer(Int64(blob.payload.no))),
                    ("nextUpdate", .string(blob.payload.nextUpdate)), ("stale", .bool(stale)),
                ])
            ),
        ])
    }
}
