import Synchronization
import Transport

/// One ceremony's hold on the key: taken just before the first pinUvAuthToken (or shared
/// secret) is asked for, kept while the commands that use it run, let go when the ceremony ends.
///
/// Why the hold covers the whole ceremony: a key issues one pinUvAuthToken at a time, and any
/// getPinToken (or a wrong PIN, which makes it regenerate its key-agreement key) by another
/// application invalidates ours (CTAP 2.1 §6.5.5.1, §6.5.5.7). On PC/SC the card is shared, so
/// per-exchange transactions keep each exchange whole but let another application's
/// getPinToken in between our getPinToken and the makeCredential that uses the token. Held from
/// the token to the last command, nothing can come between.
///
/// Why it starts after the PIN prompt, and is let go before asking again: while it is held,
/// every other application on the card waits (and gives up at its deadline). A person typing a
/// PIN can take as long as they like; nothing the key has said is at risk while they type, since
/// the key agreement and the token come after the PIN. So the prompt never runs with the card
/// held, and after a wrong PIN the hold is let go before the next prompt (the next attempt
/// starts with a fresh key agreement anyway). Waits the key itself imposes (a touch, a
/// fingerprint) are part of an exchange and are held, as a single exchange always was. The
/// one prompt that can come while the hold is kept is the account choice after a discoverable
/// getAssertion, and only when a large-blob write still needs the token (see the provider).
final class CeremonyHold: Sendable {
    private let connection: any AuthenticatorConnection
    // Whether this ceremony holds the key now; changed only by the ceremony's own task.
    private let held = Mutex(false)

    init(connection: any AuthenticatorConnection) {
        self.connection = connection
    }

    /// Takes the key unless this ceremony holds it already.
    func take(deadline: Deadline, deviceURI: String) async throws(AuthenticatorError) {
        guard !held.withLock({ $0 }) else { return }
        do { try await connection.beginExclusiveAccess(deadline: deadline) } catch {
            throw AuthenticatorError(error, deviceURI: deviceURI)
        }
        held.withLock { $0 = true }
    }

    /// Lets the key go if this ceremony holds it.
    func letGo() async {
        let wasHeld = held.withLock { h -> Bool in
            defer { h = false }
            return h
        }
        if wasHeld { await connection.endExclusiveAccess() }
    }
}

extension Authenticator {
    /// The ceremony the current task runs in, if any.
    @TaskLocal static var ceremonyHold: CeremonyHold?

    /// Runs `body` as one ceremony: from the moment a pinUvAuthToken is asked for (after any PIN
    /// prompt) until `body` ends, the key is held for this process alone, so another
    /// application's getPinToken cannot invalidate the token before the commands that use it.
    ///
    /// On a PC/SC card the hold is one transaction (another application waits, and is told the
    /// key is busy); on hidraw the node is held for as long as it is open anyway. Taking the
    /// hold waits at most until the token's own deadline and ends at once on cancellation.
    /// Nested calls join the outer ceremony.
    public static func withCeremony<T, Failure: Error>(
        on authenticator: Authenticator, isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        if ceremonyHold != nil { return try await body() }
        let hold = CeremonyHold(connection: authenticator.session.connection)
        let result: Result<T, Failure> = await $ceremonyHold.withValue(hold) {
            do throws(Failure) { return .success(try await body()) } catch { return .failure(error) }
        }
        await hold.letGo()
        return try result.get()
    }

    /// ``withCeremony(on:isolation:_:)`` on this key, from its own methods.
    func withCeremony<T>(_ body: () async throws(AuthenticatorError) -> T) async throws(AuthenticatorError) -> T {
        try await Self.withCeremony(on: self, body)
    }

    /// Takes the key for the current ceremony (if any) before a token or shared secret is
    /// asked for: waits at most until `deadline` (then `busy`), ends at once on cancellation.
    public nonisolated func holdForCeremony(deadline: Deadline) async throws(AuthenticatorError) {
        try await Self.ceremonyHold?.take(deadline: deadline, deviceURI: uri)
    }

    /// Lets the current ceremony's hold go before the user is asked something (another PIN
    /// attempt, which obtains a new token anyway, or a choice after which no token is used).
    /// The next token request takes it again.
    public nonisolated static func releaseCeremonyHoldForPrompt() async {
        await ceremonyHold?.letGo()
    }
}
