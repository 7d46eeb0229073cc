import CTAP2
import Transport

/// The PIN and built-in UV state of a key, read without spending an attempt.
public struct PINStatus: Hashable, Sendable {
    /// Whether a PIN is set; nil when the key has no PIN support.
    public var isSet: Bool?
    /// PIN attempts left, where the key has a PIN.
    public var retries: Int?
    /// Whether the key must be removed and re-inserted before the next PIN attempt.
    public var powerCycleRequired: Bool?
    /// Built-in UV attempts left, where the key has built-in UV and reports them.
    public var uvRetries: Int?
    /// Whether the key demands a new PIN before its PIN can be used (forcePINChange).
    public var forcePINChange: Bool
    /// The shortest PIN the key accepts.
    public var minPINLength: Int

    /// Whether the PIN is blocked: a PIN is set, no attempts are left, and only a reset helps.
    public var isBlocked: Bool { isSet == true && retries == 0 }

    /// Creates a status.
    public init(
        isSet: Bool?, retries: Int?, powerCycleRequired: Bool?, uvRetries: Int?, forcePINChange: Bool,
        minPINLength: Int
    ) {
        self.isSet = isSet
        self.retries = retries
        self.powerCycleRequired = powerCycleRequired
        self.uvRetries = uvRetries
        self.forcePINChange = forcePINChange
        self.minPINLength = minPINLength
    }
}

/// PIN administration (CTAP 2.1 §6.5): status, verification, setting and changing.
extension Authenticator {
    /// The PIN status: whether one is set, attempts left (PIN and built-in UV), and whether the
    /// key demands a new PIN. Reading the counters costs no attempt.
    public func pinStatus(deadline: Deadline) async throws(AuthenticatorError) -> PINStatus {
        let isSet = info.options[.clientPIN]
        var status = PINStatus(
            isSet: isSet, retries: nil, powerCycleRequired: nil, uvRetries: nil,
            forcePINChange: info.forcePINChange == true, minPINLength: Int(clamping: info.minPINLength ?? 4))
        // getPINRetries answers with or without a PIN set (a fresh key reports its full count).
        if isSet != nil {
            let retries = try await pinRetries(deadline: deadline)
            status.retries = retries.retries
            status.powerCycleRequired = retries.powerCycleRequired
        }
        // getUVRetries came with CTAP 2.1's built-in UV tokens; older keys do not answer it.
        if info.options.isEnabled(.userVerification), info.options.isEnabled(.pinUVAuthToken) {
            status.uvRetries = try await uvRetries(deadline: deadline)
        }
        return status
    }

    /// Checks `pin` by obtaining a token with a permission that grants nothing lasting (the
    /// token is wiped at once) and returns the PIN attempts left afterwards (the full count: a
    /// right PIN refills it). A wrong PIN fails with ``AuthenticatorError/Code/pinInvalid`` and
    /// ``AuthenticatorError/retriesLeft``; a blocked PIN fails before the PIN is sent.
    public func verifyPIN(_ pin: String, deadline: Deadline) async throws(AuthenticatorError) -> Int {
        try requirePINSet()
        _ = try await checkedPINRetries(deadline: deadline)
        let clientPIN = try clientPIN()
        do throws(CTAP2Error) {
            let token = try await clientPIN.pinUVAuthToken(
                pin: pin, permissions: verificationPermissions, rpID: nil, deadline: deadline)
            token.wipe()
        } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
        return try await pinRetries(deadline: deadline).retries
    }

    /// Checks the PIN the user types through `interaction`, asking again after a wrong PIN
    /// while attempts remain, and carrying out a PIN change first when the key demands one
    /// (forcePINChange). Returns the PIN attempts left afterwards.
    public func verifyPIN(interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError) -> Int
    {
        try requirePINSet()
        let token = try await pinToken(
            permissions: verificationPermissions, rpID: nil, interaction: interaction, deadline: deadline)
        token.wipe()
        return try await pinRetries(deadline: deadline).retries
    }

    /// Sets the first PIN of a key that has none, then reads getInfo again.
    public func setPIN(_ newPIN: String, deadline: Deadline) async throws(AuthenticatorError) {
        let clientPIN = try clientPIN()
        // Key agreement and setPIN as one ceremony, as for changePIN.
        try await withCeremony { () throws(AuthenticatorError) in
            try await holdForCeremony(deadline: deadline)
            do throws(CTAP2Error) { try await clientPIN.setPIN(newPIN, deadline: deadline) } catch {
                throw AuthenticatorError(error, deviceURI: uri)
            }
        }
        try await refreshInfo(deadline: deadline)
    }

    /// Changes the PIN (this also satisfies a forcePINChange), then reads getInfo again. A
    /// blocked PIN fails before anything is sent.
    public func changePIN(from currentPIN: String, to newPIN: String, deadline: Deadline)
        async throws(AuthenticatorError)
    {
        try requirePINSet()
        _ = try await checkedPINRetries(deadline: deadline)
        let clientPIN = try clientPIN()
        // Key agreement and changePIN as one ceremony: another application's wrong PIN in
        // between would make the key regenerate its key-agreement key (Authenticator+Ceremony.swift).
        try await withCeremony { () throws(AuthenticatorError) in
            try await holdForCeremony(deadline: deadline)
            do throws(CTAP2Error) {
                try await clientPIN.changePIN(from: currentPIN, to: newPIN, deadline: deadline)
            } catch {
                throw AuthenticatorError(error, deviceURI: uri)
            }
        }
        try await refreshInfo(deadline: deadline)
    }

    /// The permission a PIN check asks for: one the key grants with the PIN and that lets the
    /// token do nothing without a further command. ga unless the key withholds mc/ga from PIN
    /// tokens (noMcGaPermissionsWithClientPin); then the first feature permission it offers.
    var verificationPermissions: PINUVAuthTokenPermissions {
        guard info.options.isEnabled(.noMcGaPermissionsWithClientPIN) else { return [.getAssertion] }
        if info.options.isEnabled(.credentialManagement) { return [.credentialManagement] }
        if info.options.isEnabled(.authenticatorConfig) { return [.authenticatorConfiguration] }
        if info.options.isSupported(.bioEnroll) { return [.bioEnrollment] }
        if info.options.isEnabled(.largeBlobs) { return [.largeBlobWrite] }
        return [.getAssertion]
    }

    private func requirePINSet() throws(AuthenticatorError) {
        guard info.options.isSupported(.clientPIN) else {
            throw AuthenticatorError(
                .pinUVNotSupported, "The security key does not support a PIN.", deviceURI: uri)
        }
        guard info.options.isEnabled(.clientPIN) else {
            throw AuthenticatorError(
                .pinNotSet, "No PIN is set on the security key: set one first.", deviceURI: uri)
        }
    }
}
