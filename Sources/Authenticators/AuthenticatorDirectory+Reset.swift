import CTAP2
import Transport

extension AuthenticatorDirectory {
    /// Resets `authenticator` (CTAP 2.1 §6.6) with ykman-grade care, and returns the handle to
    /// use afterwards: `authenticator` itself, or a new handle when the key had to be re-inserted
    /// (the old one is closed then).
    ///
    /// Keys accept a reset only within about 10 seconds of power-up, so that software cannot
    /// wipe a key that merely sits in a port. The reset is tried at once: the time the key was
    /// plugged in is not known here (only when it was opened), and a key outside its window
    /// answers NOT_ALLOWED without asking for a touch, so trying costs nothing. On NOT_ALLOWED,
    /// `interaction` is told to remove and re-insert the key
    /// (``AuthenticatorInstruction/Kind/reinsertToReset``); the discovery's hotplug events are
    /// watched for the key's removal and then its return, and the reset is sent as soon as the
    /// returning key has answered getInfo, well inside the window.
    ///
    /// The returning key must be the same one: it must come back at the same place (the same
    /// device URI, that is the same hidraw node or the same PC/SC reader; a USB key whose node
    /// changed is still recognised by the same vendor ID, product ID and serial number where
    /// it reports one) and report the same AAGUID. A different key is refused with
    /// ``AuthenticatorError/Code/differentDevice`` and nothing is sent to it. Everything is
    /// bounded by `deadline`; without anyone to instruct (`interaction` nil or unable to
    /// prompt) the NOT_ALLOWED error is returned as it is.
    public func reset(
        _ authenticator: Authenticator, interaction: (any AuthenticatorInteraction)?, deadline: Deadline
    ) async throws(AuthenticatorError) -> Authenticator {
        do throws(AuthenticatorError) {
            try await authenticator.reset(interaction: interaction, deadline: deadline)
            return authenticator
        } catch  where error.code == .notAllowed {
            guard let interaction, interaction.canPrompt else { throw error }
            logger.info(
                "the key refused reset outside its power-up window; asking for re-insertion",
                metadata: ["device": "\(authenticator.uri)"])
            let returned = try await waitForReinsertion(
                of: authenticator, interaction: interaction, deadline: deadline)
            do throws(AuthenticatorError) {
                try await returned.reset(interaction: interaction, deadline: deadline)
                return returned
            } catch {
                await returned.close()
                throw error
            }
        }
    }

    private enum ReinsertInput: Sendable {
        case event(DeviceEvent)
        case deadline
    }

    /// Waits for the key's removal, then for the same key to arrive, and opens it.
    func waitForReinsertion(
        of original: Authenticator, interaction: any AuthenticatorInteraction, deadline: Deadline
    ) async throws(AuthenticatorError) -> Authenticator {
        let discovery = try discovery(for: original.uri)
        let descriptor = original.descriptor
        let aaguid = await original.info.aaguid
        let (inputs, feed) = AsyncStream<ReinsertInput>.makeStream()
        // Subscribed before the user is told to remove the key, so the removal cannot be missed.
        let events = discovery.events()
        let logger = self.logger
        let outcome = await withTaskGroup(
            of: Void.self, returning: Result<Authenticator, AuthenticatorError>.self
        ) {
            group in
            group.addTask {
                for await event in events { feed.yield(.event(event)) }
            }
            group.addTask {
                try? await Task.sleep(until: deadline.instant, clock: .continuous)
                feed.yield(.deadline)
            }
            interaction.instruct(
                AuthenticatorInstruction(
                    kind: .reinsertToReset, deviceURI: original.uri,
                    message:
                        "The security key accepts a reset only within about 10 seconds of being plugged in: remove it now and insert it again (or lift it from the reader and put it back)."
                ))
            var removed = false
            var outcome: Result<Authenticator, AuthenticatorError> = .failure(
                AuthenticatorError(
                    .timeout,
                    "The security key was not removed and inserted again before the deadline; nothing was erased.",
                    deviceURI: original.uri))
            loop: for await input in inputs {
                switch input {
                case .event(.removed(let uri)) where uri == descriptor.uri:
                    // The old connection is dead now; release it.
                    removed = true
                    await original.close()
                    logger.debug("key removed for reset", metadata: ["device": "\(uri)"])
                case .event(.arrived(let arrived)) where removed && Self.samePlace(arrived, descriptor):
                    do throws(AuthenticatorError) {
                        let candidate = try await open(uri: arrived.uri, deadline: deadline)
                        guard await candidate.info.aaguid == aaguid else {
                            await candidate.close()
                            outcome = .failure(
                                AuthenticatorError(
                                    .differentDevice,
                                    "A different security key was inserted (its AAGUID differs); it was not reset. Insert the key you meant to reset.",
                                    deviceURI: arrived.uri))
                            break loop
                        }
                        outcome = .success(candidate)
                    } catch {
                        outcome = .failure(error)
                    }
                    break loop
                case .deadline:
                    break loop
                case .event:
                    // The listing of keys already present, other keys, or our key before removal.
                    continue
                }
            }
            group.cancelAll()
            feed.finish()
            return outcome
        }
        if Task.isCancelled, case .failure = outcome { throw .cancelled(deviceURI: original.uri) }
        return try outcome.get()
    }

    /// Whether `arrived` is where the key described by `original` was: the same URI, or for
    /// USB the same vendor, product and serial number (the hidraw node may change on re-plug).
    static func samePlace(_ arrived: DeviceDescriptor, _ original: DeviceDescriptor) -> Bool {
        if arrived.uri == original.uri { return true }
        guard arrived.transport == .usb, original.transport == .usb, let serial = original.serialNumber,
            !serial.isEmpty, let vendor = original.vendorID, let product = original.productID
        else { return false }
        return arrived.serialNumber == serial && arrived.vendorID == vendor && arrived.productID == product
    }
}
