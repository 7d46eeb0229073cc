import Authenticators

/// Adapts the provider's ``SecurityKeyInteraction`` and status stream to the device layer's
/// ``AuthenticatorInteraction``.
struct ProviderInteraction: AuthenticatorInteraction {
    let interaction: (any SecurityKeyInteraction)?
    let continuation: AsyncStream<SecurityKeyStatus>.Continuation

    var canPrompt: Bool { interaction != nil }

    func pin(_ prompt: PINPrompt) async -> String? {
        guard let interaction else { return nil }
        switch prompt.purpose {
        case .newPIN:
            return await interaction.newPIN(deviceURI: prompt.device.uri, minimumLength: prompt.minimumLength)
        default:
            continuation.yield(.pinNeeded(attemptsLeft: prompt.attemptsLeft))
            return await interaction.pin(deviceURI: prompt.device.uri, attemptsLeft: prompt.attemptsLeft)
        }
    }

    func activity(_ activity: AuthenticatorActivity) {
        switch activity {
        case .waitingForDevice: continuation.yield(.waitingForKey)
        case .selectingByTouch(let count): continuation.yield(.selectingKey(count: count))
        case .touchNeeded(let uri): continuation.yield(.touchNeeded(deviceURI: uri))
        case .userVerificationRetry(_, let attemptsLeft):
            continuation.yield(.userVerificationRetry(attemptsLeft: attemptsLeft))
        case .fallingBackToPIN, .deviceLeft: break
        }
    }
}
