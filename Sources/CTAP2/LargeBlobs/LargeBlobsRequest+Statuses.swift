extension LargeBlobsRequest {
    /// The statuses only authenticatorLargeBlobs returns (CTAP 2.1 §6.10.2):
    /// CTAP2_ERR_LARGE_BLOB_STORAGE_FULL and CTAP2_ERR_INTEGRITY_FAILURE (the written array's
    /// hash did not match).
    public func explain(_ error: CTAP2Error) -> CTAP2Error {
        var explained = error
        switch error.status {
        case .largeBlobStorageFull?:
            explained.code = .largeBlobStorageFull
            explained.message = "The large-blob array would not fit in the key's large-blob storage."
        case .integrityFailure?:
            explained.code = .integrityFailure
            explained.message = CTAPStatus.integrityFailure.message
        default:
            break
        }
        return explained
    }
}
