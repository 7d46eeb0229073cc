import CBOR
import CTAP2
import FoundationEssentials
import X509

/// A metadata BLOB verified and stored in a ``MetadataCache``: what `securitykey mds update`
/// reports.
public struct MetadataUpdate: Sendable {
    /// The BLOB stored.
    public var blob: MetadataBLOB
    /// The record of the BLOB it replaced, if any.
    public var previous: MetadataCache.Record?
    /// The cache it is stored in.
    public var cache: MetadataCache

    /// The update as a JSON document (`mds update --json`, Docs/CLI.md): serial number, next
    /// update, entry count, signature algorithm, signer and trust anchor, verification time,
    /// whether the BLOB is already stale, the serial number it replaced, the cache's path, and
    /// `revocation` (``RevocationCheck/json``, null when CRLs were not fetched).
    public var json: JSONValue {
        .object([
            ("no", .integer(Int64(blob.payload.no))),
            ("nextUpdate", .string(blob.payload.nextUpdate)),
            ("entries", .integer(Int64(blob.payload.entries.count))),
            ("algorithm", .string(blob.algorithm)),
            ("signedBy", .string(blob.signingChain.first?.subject.description ?? "")),
            ("trustAnchor", blob.trustAnchor.map { .string($0.subject.description) } ?? .null),
            ("verificationTime", .string(Date.ISO8601FormatStyle().format(blob.verificationTime))),
            ("stale", .bool(blob.isStale)),
            ("previousNo", previous.map { .integer(Int64($0.no)) } ?? .null),
            ("cache", .string(cache.blobURL.path)),
            ("revocation", blob.revocation?.json ?? .null),
        ])
    }
}

extension MetadataCache {
    /// Verifies `bytes` as a metadata BLOB (signature, and signing chain to `anchors`, the
    /// GlobalSign root when nil, checked against `crls` at `verifyTime` or now, and against the
    /// CRLs it names when `revocation` is given, refused when those cannot be checked and
    /// `requiresRevocation`), refusing one older than `previous` (this cache's record, read by
    /// the caller before it fetched the BLOB), and stores it with its `source`.
    public func update(
        with bytes: [UInt8], source: String, previous: Record?, anchors: [Certificate]? = nil,
        crls: [CertificateRevocationList] = [], verifyTime: Date? = nil, revocation: RevocationChecker? = nil,
        requiresRevocation: Bool = false
    ) async throws(WebAuthnVerificationError) -> MetadataUpdate {
        let verifier = MetadataBLOBVerifier(
            anchors: anchors, crls: crls, verifyTime: verifyTime, minimumSerialNumber: previous?.no,
            revocation: revocation, requiresRevocation: requiresRevocation)
        let blob = try await verifier.verify(bytes)
        try store(blob, bytes: bytes, source: source)
        return MetadataUpdate(blob: blob, previous: previous, cache: self)
    }

    /// The entry naming a model in the cached metadata (by AAGUID, else by attestation
    /// certificate); nil without a cache or an entry.
    public func entry(aaguid: AAGUID, attestationCertificate: Certificate?) -> MetadataBLOBPayloadEntry? {
        (try? load()?.payload)?.entry(aaguid: aaguid, attestationCertificate: attestationCertificate)
    }
}

extension MetadataBLOBPayloadEntry {
    /// The entry in lines, for people (`mds show`): model, certification, version, status
    /// history, attestation roots and the BLOB it came from (`stale`: its nextUpdate passed).
    public func summaryLines(blob: MetadataBLOB, stale: Bool) -> [String] {
        var lines = ["Model: \(description ?? "(no description)")"]
        if let c = certification {
            lines.append("Certification: \(c.status)\(c.effectiveDate.map { " (since \($0))" } ?? "")")
        }
        if let v = metadataStatement?.authenticatorVersion { lines.append("Authenticator version: \(v)") }
        lines.append("Status history:")
        for r in statusHistory {
            lines.append(
                "  \(r.effectiveDate ?? "----------")  \(r.status)\(r.certificationDescriptor.map { "  \($0)" } ?? "")")
        }
        lines.append("Attestation roots:")
        for root in attestationRoots { lines.append("  \(root.subject)") }
        lines.append(
            "From BLOB no \(blob.payload.no), next update \(blob.payload.nextUpdate)\(stale ? " (passed)" : "").")
        return lines
    }
}
