import CTAP2
import Transport

extension AuthenticatorDirectory {
    /// What ``openOnly(deadline:)`` found among the keys present.
    public enum OnlyKey: Sendable {
        /// The one key present, open.
        case one(Authenticator)
        /// Several keys are present, at these URIs (in discovery order); none is left open.
        case several(uris: [String])
    }

    /// Every key present now, open, in discovery order; at least one. With none, throws the
    /// permission failure met while opening (a key is there but this user may not open it,
    /// ``AuthenticatorError/Code/permissionDenied``), else ``AuthenticatorError/Code/noDevice``.
    public func openPresent(deadline: Deadline) async throws(AuthenticatorError) -> [Authenticator] {
        let found = await openAll(deadline: deadline)
        guard found.authenticators.isEmpty else { return found.authenticators }
        throw found.denied ?? AuthenticatorError(.noDevice, "No security key found.")
    }

    /// The only key present, open; with several, closes them all and says where they are, so
    /// that the caller never uses a key the user did not name (administration commands, which
    /// change or erase a key, refuse to guess). No key is thrown as ``openPresent(deadline:)``
    /// throws it.
    public func openOnly(deadline: Deadline) async throws(AuthenticatorError) -> OnlyKey {
        let present = try await openPresent(deadline: deadline)
        if present.count == 1, let only = present.first { return .one(only) }
        for key in present { await key.close() }
        return .several(uris: present.map(\.uri))
    }
}
