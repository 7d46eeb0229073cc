extension RelyingPartyPolicy {
    /// The policy of a relying party that expects `relyingPartyID`, `origin` and `challenge`
    /// (each nil: not checked) of a response whose client data is `clientData`. With only the
    /// client data's hash (``ClientDataInput/hash(_:)``) there is nothing the origin and the
    /// challenge could be checked against, so they are left out (the hash is still what the
    /// signature covers); crossOrigin and topOrigin are not looked at.
    public init(relyingPartyID: String?, origin: String?, challenge: [UInt8]?, for clientData: ClientDataInput) {
        let hasClientData = if case .json = clientData { true } else { false }
        self.init(
            relyingPartyID: relyingPartyID, origins: hasClientData ? origin.map { [$0] } : nil,
            challenge: hasClientData ? challenge : nil, crossOrigin: .unchecked)
    }
}
