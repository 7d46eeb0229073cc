/// What a request is waiting for, as a UI or a daemon shows it
/// (``SecurityKeyAuthorizationController/statusUpdates``).
public enum SecurityKeyStatus: Hashable, Sendable {
    /// No key is present yet: insert or tap one.
    case waitingForKey
    /// Several keys are present and blink: touch the one to use.
    case selectingKey(count: Int)
    /// The key at this URI was chosen (the only one, the one touched, or the first to arrive).
    case keySelected(deviceURI: String)
    /// The key at this URI waits for a touch.
    case touchNeeded(deviceURI: String)
    /// The key needs its PIN; `attemptsLeft` as the key reported (nil if unknown).
    case pinNeeded(attemptsLeft: Int?)
    /// Built-in verification (a fingerprint) failed; the user may try again.
    case userVerificationRetry(attemptsLeft: Int?)
    /// Several accounts are stored for the relying party: the user picks one.
    case selectingAccount(count: Int)
    /// The request finished (successfully or not).
    case done
}

/// One account stored on a key for the relying party, offered for choice in a discoverable
/// sign-in.
public struct SecurityKeyAccount: Hashable, Sendable {
    /// The user handle.
    public var userID: [UInt8]
    /// The account name, when stored.
    public var name: String?
    /// The display name, when stored.
    public var displayName: String?
    /// The credential ID.
    public var credentialID: [UInt8]

    /// Creates an account entry.
    public init(userID: [UInt8], name: String?, displayName: String?, credentialID: [UInt8]) {
        self.userID = userID
        self.name = name
        self.displayName = displayName
        self.credentialID = credentialID
    }
}

/// What the library asks the user during a request. Return nil to cancel.
public protocol SecurityKeyInteraction: Sendable {
    /// The key's PIN, for the key at `deviceURI`; `attemptsLeft` as the key reported.
    func pin(deviceURI: String, attemptsLeft: Int?) async -> String?
    /// Which of `accounts` to sign in with (an index into `accounts`).
    func chooseAccount(_ accounts: [SecurityKeyAccount]) async -> Int?
    /// A new PIN for the key at `deviceURI`, which demands that its PIN be changed before use
    /// (at least `minimumLength` Unicode code points). The current PIN is asked with
    /// ``pin(deviceURI:attemptsLeft:)`` afterwards.
    func newPIN(deviceURI: String, minimumLength: Int) async -> String?
}

extension SecurityKeyInteraction {
    /// Default: a forced PIN change is not offered, and the request ends as cancelled.
    public func newPIN(deviceURI: String, minimumLength: Int) async -> String? { nil }
}
