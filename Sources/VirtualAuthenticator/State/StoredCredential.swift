/// What a virtual key shows about one of its discoverable credentials, for tests that check
/// what a registration left behind. Private keys are never exposed.
public struct StoredCredential: Sendable, Hashable {
    /// The credential ID.
    public var id: [UInt8]
    /// The relying party ID it belongs to.
    public var rpID: String
    /// The user handle.
    public var userID: [UInt8]
    /// The user name given at registration, if any.
    public var userName: String?
    /// The display name given at registration, if any.
    public var userDisplayName: String?
    /// The credential's algorithm.
    public var algorithm: COSEAlgorithm
}

extension VirtualKey {
    /// The discoverable credentials, oldest first.
    public var discoverableCredentials: [StoredCredential] {
        state.credentials.map {
            StoredCredential(
                id: $0.id, rpID: $0.rpID, userID: $0.userID, userName: $0.userName,
                userDisplayName: $0.userDisplayName, algorithm: $0.algorithm)
        }
    }
}
