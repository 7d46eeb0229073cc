extension WebAuthnVerificationError.Code {
    /// A metadata BLOB is not a well-formed JWS or its payload is not MDS3 JSON (FIDO MDS3 §3.1.7).
    public static let metadataMalformed = Self(rawValue: "metadata-malformed")
    /// A metadata BLOB's JWS signature does not verify with its signing certificate.
    public static let metadataSignatureInvalid = Self(rawValue: "metadata-signature-invalid")
    /// A metadata BLOB's signing certificates do not chain to a trusted anchor.
    public static let metadataChainInvalid = Self(rawValue: "metadata-chain-invalid")
    /// A certificate of a metadata BLOB's signing chain is expired (or not yet valid) at the
    /// verification time.
    public static let metadataCertificateExpired = Self(rawValue: "metadata-certificate-expired")
    /// A certificate of a metadata BLOB's signing chain is listed on a CRL.
    public static let metadataSignerRevoked = Self(rawValue: "metadata-signer-revoked")
    /// A CRL given for a metadata BLOB is malformed or not signed by its issuer.
    public static let metadataCRLInvalid = Self(rawValue: "metadata-crl-invalid")
    /// A metadata BLOB's serial number is lower than the one already trusted (FIDO MDS3 §3.1.8).
    public static let metadataRollback = Self(rawValue: "metadata-rollback")
    /// A metadata BLOB's download URL is not an http or https URL.
    public static let metadataURLInvalid = Self(rawValue: "metadata-url-invalid")
    /// The server answered a metadata BLOB download with an HTTP status other than 200.
    public static let metadataHTTPStatus = Self(rawValue: "metadata-http-status")
    /// A metadata BLOB offered or received is larger than the download's cap.
    public static let metadataTooLarge = Self(rawValue: "metadata-too-large")
    /// A metadata BLOB download failed on the network (no connection, timeout, TLS).
    public static let metadataNetwork = Self(rawValue: "metadata-network")
    /// The authenticator model is not in the metadata, and the policy requires it to be.
    public static let authenticatorNotInMetadata = Self(rawValue: "authenticator-not-in-metadata")
    /// The metadata reports a status for the authenticator model that the policy refuses.
    public static let authenticatorStatusRefused = Self(rawValue: "authenticator-status-refused")
}
