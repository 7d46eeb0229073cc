import CTAP2
import Synchronization
import Transport

/// authenticatorReset (CTAP 2.1 §6.6) on one open key. The re-insert flow for keys plugged in
/// too long ago is ``AuthenticatorDirectory/reset(_:interaction:deadline:)``.
extension Authenticator {
    /// The WebAuthn transport names (as getInfo's transportsForReset lists them) this handle's
    /// connection may be; empty when it is none of them (UDP, in-process), where the key's
    /// list is not checked.
    public nonisolated var webAuthnTransports: [String] {
        switch transport {
        case .usb: ["usb"]
        // PC/SC carries both NFC and contact smart cards; which one is not known here.
        case .nfc: ["nfc", "smart-card"]
        default: []
        }
    }

    /// Refuses, before anything is sent, a reset over a transport the key's transportsForReset
    /// (CTAP 2.2 §6.4) does not list.
    public func checkResetTransport() throws(AuthenticatorError) {
        guard let allowed = info.transportsForReset, !allowed.isEmpty else { return }
        let current = webAuthnTransports
        guard !current.isEmpty, !current.contains(where: allowed.contains) else { return }
        throw AuthenticatorError(
            .notSupported,
            "This security key can be reset only over \(allowed.joined(separator: " or ")), not over \(current[0]); connect it that way and try again.",
            deviceURI: uri)
    }

    /// Sends authenticatorReset once: erases every credential and the PIN. When the key waits
    /// for the touch, `interaction` is told to touch (or, with longTouchForReset, to hold the
    /// touch). A key plugged in too long ago answers ``AuthenticatorError/Code/notAllowed``;
    /// each refusal has its own sentence (``ResetRequest/explain(_:)``). getInfo is read again
    /// afterwards.
    public func reset(interaction: (any AuthenticatorInteraction)?, deadline: Deadline)
        async throws(AuthenticatorError)
    {
        try checkResetTransport()
        let touch = touchObserver(interaction)
        let instruction = resetTouchInstruction
        let told = Mutex(false)
        let keepalive: @Sendable (KeepaliveStatus) -> Void = { status in
            touch(status)
            guard status == .userPresenceNeeded, let interaction else { return }
            let first = told.withLock { (done: inout Bool) -> Bool in
                defer { done = true }
                return !done
            }
            if first { interaction.instruct(instruction) }
        }
        do throws(CTAP2Error) {
            try await session.reset(deadline: deadline, keepalive: keepalive)
        } catch {
            throw AuthenticatorError(ResetRequest.explain(error), deviceURI: uri)
        }
        logger.info("the key was reset", metadata: ["device": "\(uri)"])
        try await refreshInfo(deadline: deadline)
    }

    /// What the user is told when the key waits for the reset touch.
    var resetTouchInstruction: AuthenticatorInstruction {
        if info.longTouchForReset == true {
            return AuthenticatorInstruction(
                kind: .holdTouchToReset, deviceURI: uri,
                message:
                    "Touch the security key and keep touching it for several seconds to confirm the reset, which erases every credential on it and its PIN."
            )
        }
        return AuthenticatorInstruction(
            kind: .touchToReset, deviceURI: uri,
            message:
                "Touch the security key to confirm the reset, which erases every credential on it and its PIN."
        )
    }
}
