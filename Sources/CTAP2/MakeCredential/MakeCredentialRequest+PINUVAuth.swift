extension MakeCredentialRequest: PINUVAuthorizedRequest {
    /// mc, bound to the request's RP ID (CTAP 2.1 §6.1.2 step 11).
    public static var permission: PINUVAuthTokenPermissions { .makeCredential }
    /// The RP the credential is made for.
    public var permissionRPID: String? { rp.id }
    /// The client data hash (§6.1.2).
    public func pinUVAuthMessage() throws(CTAP2Error) -> [UInt8] {
        try Self.clientDataHashMessage(clientDataHash)
    }
}
