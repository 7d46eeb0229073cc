import _SecurityKeyInternals

/// Which account to sign in with when the key holds several for the relying party: what an
/// application's ``SecurityKeyInteraction/chooseAccount(_:)`` answers with when the user named
/// the account up front.
public enum SecurityKeyAccountChoice: Sendable, Hashable {
    /// Ask the user.
    case ask
    /// The account with this name or display name.
    case name(String)
    /// The account with this user handle.
    case userID([UInt8])

    /// Whether `account` is the one named (every account, for ``ask``).
    public func matches(_ account: SecurityKeyAccount) -> Bool {
        switch self {
        case .ask: true
        case .name(let name): account.name == name || account.displayName == name
        case .userID(let id): account.userID == id
        }
    }
}

extension SecurityKeyAccountChoice {
    /// Checks that `assertion` signed in as the account chosen by user handle: a key holding
    /// one account for the relying party signs with it without offering a choice, so the
    /// choice is checked against what it signed. Throws ``SecurityKeyError/Code/noCredentials``
    /// naming the account it signed with; other choices pass.
    public func check(_ assertion: SecurityKeyCredentialAssertion) throws(SecurityKeyError) {
        guard case .userID(let id) = self, let signed = assertion.userID, signed != id else { return }
        throw SecurityKeyError(
            .noCredentials,
            "The key's account for this site is user ID \(Base64URL.encode(signed)), not the one asked for.")
    }
}

extension SecurityKeyAccount {
    /// The account in words: its name, display name and user handle (base64url), as a list
    /// of accounts to choose from shows it.
    public var label: String {
        let id = Base64URL.encode(userID)
        switch (name, displayName) {
        case (let name?, let display?) where display != name: return "\(name) (\(display), user ID \(id))"
        case (let name?, _), (nil, let name?): return "\(name) (user ID \(id))"
        case (nil, nil): return "user ID \(id)"
        }
    }
}
