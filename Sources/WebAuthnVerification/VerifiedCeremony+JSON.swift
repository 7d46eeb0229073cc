import _SecurityKeyInternals
import CBOR

extension VerifiedRegistration {
    /// What was verified, as a JSON document (`securitykey verify --json`'s `registration`,
    /// Docs/CLI.md). With `metadataChecked`, `model` and `certification` come from `model` (null
    /// when the metadata has no entry); without, they are left out. `revocation` is there when
    /// the trust policy checked CRLs (``RevocationCheck/json``).
    public func json(metadataChecked: Bool, model: MetadataBLOBPayloadEntry?) -> JSONValue {
        let trusted: Bool? = attestation.trustAnchor != nil ? true : nil
        return .members([
            ("verified", true),
            ("format", .string(attestationFormat.rawValue)),
            ("attestationType", .string(attestation.type.rawValue)),
            ("trustPath", .array(attestation.trustPath.map { .string($0.nameForMessages) })),
            ("trustRootVerified", trusted.map(JSONValue.bool)),
            ("certificatePath", .array(attestation.certificatePath.map { .string($0.nameForMessages) })),
            ("trustAnchor", attestation.trustAnchor.map { .string($0.nameForMessages) }),
            ("revocation", attestation.revocation?.json),
            ("model", metadataChecked ? model?.description.map(JSONValue.string) ?? .null : nil),
            ("certification", metadataChecked ? model?.certification.map { .string($0.status.rawValue) } ?? .null : nil),
            ("credentialId", .string(Base64URL.encode(credentialID))),
            ("aaguid", .string(aaguid.description.lowercased())),
            ("signCount", .integer(Int64(signCount))),
            ("userVerified", .bool(flags.contains(.userVerified))),
        ])
    }
}

extension VerifiedAssertion {
    /// What was verified, as a JSON document (`securitykey verify --json`'s `assertion`).
    public var json: JSONValue {
        .members([
            ("verified", true),
            ("signCount", .integer(Int64(signCount))),
            ("userPresent", .bool(flags.contains(.userPresent))),
            ("userVerified", .bool(flags.contains(.userVerified))),
        ])
    }
}

extension VerifiedRegistration {
    /// What was verified, in one sentence for people (`securitykey verify`): the format and
    /// type of the attestation, the certificate that signed it, the trust anchor its path
    /// reached, the model `model` (a metadata entry) names, and the CRL check.
    public func summary(model: MetadataBLOBPayloadEntry?) -> String {
        var line = "Registration: \(attestationFormat) attestation (\(attestation.type)) verifies"
        if let leaf = attestation.trustPath.first { line += "; signed by \(leaf.nameForMessages)" }
        if let anchor = attestation.trustAnchor {
            line += ", chained to the trust anchor \(anchor.nameForMessages) (\(attestation.certificatePath.count) certificates)"
        }
        if let name = model?.description { line += "; the model is \(name) in the FIDO metadata" }
        if let revocation = attestation.revocation { line += "; \(revocation.summary)" }
        return line + "."
    }
}
