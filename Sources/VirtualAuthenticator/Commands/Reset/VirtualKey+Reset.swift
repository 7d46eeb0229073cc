import _SecurityKeyInternals
import CBOR
import Transport

extension CTAPCommand {
    /// authenticatorReset (§6.6).
    public static let reset = CTAPCommand(rawValue: 0x07)
    /// authenticatorSelection (§6.9).
    public static let selection = CTAPCommand(rawValue: 0x0B)
}

extension VirtualKey.CommandHandler {
    /// authenticatorReset, offered by every CTAP2 key.
    static let reset = VirtualKey.CommandHandler(.reset, name: "reset") {
        (key, _, _, keepalive) async throws(VirtualKeyError) -> CBORMap? in
        try await key.reset(keepalive: keepalive)
    }
    /// authenticatorSelection, offered by every CTAP2 key.
    static let selection = VirtualKey.CommandHandler(.selection, name: "selection") {
        (key, _, _, keepalive) async throws(VirtualKeyError) -> CBORMap? in
        try await key.selection(keepalive: keepalive)
    }
}

extension VirtualKey {
    /// authenticatorReset (CTAP 2.1 §6.6): only within the power-up window and with user
    /// presence. Credentials die with the old wrapping key, the PIN is removed (retries and
    /// uvRetries refilled, tokens invalidated); authenticatorConfig settings (minimum PIN
    /// length and its RP IDs, alwaysUv, enterprise attestation) return to the configured
    /// defaults; the attestation identities and the global signature counter stay.
    func reset(keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async throws(VirtualKeyError)
        -> CBORMap?
    {
        guard now - poweredUp < configuration.resetWindow else {
            throw .rejected(.notAllowed, "Reset is allowed only just after the key is plugged in.")
        }
        try await collectUserPresence(keepalive: keepalive)
        state.wrappingKey = SystemRandom.bytes(32)
        state.credentials = []
        state.credentialCounters = [:]
        state.pinHash = nil
        state.pinRetries = PINPolicy.maxRetries
        state.uvRetries = nil
        state.forcePINChange = false
        state.pinLength = nil
        state.minPINLength = nil
        state.minPINLengthRPIDs = []
        state.alwaysUV = nil
        state.enterpriseAttestationEnabled = nil
        eraseFingerprints()
        state.largeBlobArray = nil
        state.largeBlobKeys = [:]
        state.storedCredentialKeys = [:]
        pendingLargeBlobWrite = nil
        clientPINSession = ClientPINSession()
        pendingEnumeration = nil
        replacePersistentToken()
        try persist()
        logger.debug("Virtual key reset")
        return nil
    }

    /// authenticatorSelection (CTAP 2.1 §6.9): the user picks this key by touching it.
    func selection(keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async throws(VirtualKeyError)
        -> CBORMap?
    {
        try await collectUserPresence(keepalive: keepalive)
        return nil
    }
}
