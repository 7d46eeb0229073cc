import CTAP2
import X509

extension MetadataCache {
    /// The cache in ``defaultDirectory(environment:)`` (`$XDG_CACHE_HOME/securitykey`).
    public static var `default`: MetadataCache { MetadataCache(directory: defaultDirectory()) }
}

extension MetadataBLOBPayload {
    /// The entry naming a model: by its AAGUID, else (U2F models, listed by key identifier) by
    /// its attestation certificate.
    public func entry(aaguid: AAGUID, attestationCertificate: Certificate?) -> MetadataBLOBPayloadEntry? {
        entry(aaguid: aaguid) ?? attestationCertificate.flatMap { entry(attestationCertificate: $0) }
    }
}
