extension MakeCredentialRequest {
    /// The statuses only makeCredential returns (CTAP 2.1 §6.1.2): CTAP2_ERR_CREDENTIAL_EXCLUDED,
    /// when a credential on the exclude list is already on the key.
    public func explain(_ error: CTAP2Error) -> CTAP2Error {
        guard let status = error.status, status == .credentialExcluded else { return error }
        var explained = error
        explained.code = .credentialExcluded
        explained.message = status.message
        return explained
    }
}
