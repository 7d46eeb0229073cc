extension GetAssertionRequest: PINUVAuthorizedRequest {
    /// ga, bound to the request's RP ID (CTAP 2.1 §6.2.2 step 9).
    public static var permission: PINUVAuthTokenPermissions { .getAssertion }
    /// The RP the assertion is for.
    public var permissionRPID: String? { rpID }
    /// The client data hash (§6.2.2).
    public func pinUVAuthMessage() throws(CTAP2Error) -> [UInt8] {
        try Self.clientDataHashMessage(clientDataHash)
    }
}
