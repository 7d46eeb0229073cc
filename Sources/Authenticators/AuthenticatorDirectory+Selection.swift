import _SecurityKeyInternals
import CTAP2
import Transport

extension AuthenticatorDirectory {
    /// Finds the key to use, as a browser does: the only key present is used at once; with
    /// several, every key blinks (``Authenticator/waitForTouch(deadline:interaction:)``) and the
    /// first touched is used, the others cancelled at once; with none, waits for one to arrive.
    ///
    /// Keys that arrive while the choice is pending join it, and a key removed meanwhile ends
    /// only its own part (``AuthenticatorError/Code/removed``). Waiting is driven by the
    /// discoveries' events (udev, PC/SC reader states); nothing here polls. The returned
    /// handle is open; every other key this call opened is closed. `including` adds keys the
    /// caller opened already: they take part like the others, and stay open (the caller's).
    public func chooseAuthenticator(
        deadline: Deadline, interaction: (any AuthenticatorInteraction)? = nil, including: [Authenticator] = []
    ) async throws(AuthenticatorError) -> Authenticator {
        let snapshot = await openAll(deadline: deadline)
        let present = including + snapshot.authenticators
        if present.count == 1, let only = present.first { return only }
        let result = await choose(
            among: present, borrowed: Set(including.map(\.uri)), denied: snapshot.denied, deadline: deadline,
            interaction: interaction)
        return try result.get()
    }

    private enum Input: Sendable {
        case event(DeviceEvent)
        case opened(Authenticator)
        case openFailed(uri: String, AuthenticatorError)
        case touched(uri: String)
        case touchFailed(uri: String, AuthenticatorError)
        case deadline
    }

    private func choose(
        among initial: [Authenticator], borrowed: Set<String>, denied: AuthenticatorError?,
        deadline: Deadline,
        interaction: (any AuthenticatorInteraction)?
    ) async -> Result<Authenticator, AuthenticatorError> {
        let (inputs, feed) = AsyncStream<Input>.makeStream()
        let logger = self.logger
        return await withTaskGroup(of: Void.self, returning: Result<Authenticator, AuthenticatorError>.self) {
            group in
            // Structured pumps: the discoveries' events, and the deadline.
            group.addTask { await forEachEvent { feed.yield(.event($0)) } }
            group.addTask {
                // In slices: one Task.sleep kept its memory until the deadline once cancelled.
                try? await CancellableSleep.sleep(until: deadline.instant)
                feed.yield(.deadline)
            }

            var candidates: [String: Authenticator] = [:]
            var opening = Set<String>()
            var touching = Set<String>()
            var removed = Set<String>()
            var lastError = denied
            var announcedSelection = false

            func startTouch(_ authenticator: Authenticator) {
                touching.insert(authenticator.uri)
                group.addTask {
                    do throws(AuthenticatorError) {
                        try await authenticator.waitForTouch(deadline: deadline, interaction: interaction)
                        feed.yield(.touched(uri: authenticator.uri))
                    } catch {
                        feed.yield(.touchFailed(uri: authenticator.uri, error))
                    }
                }
            }
            func announce() {
                if candidates.count > 1 || announcedSelection {
                    announcedSelection = true
                    interaction?.activity(.selectingByTouch(count: candidates.count))
                }
            }

            for authenticator in initial { candidates[authenticator.uri] = authenticator }
            if initial.isEmpty {
                interaction?.activity(.waitingForDevice)
            } else {
                announce()
                for authenticator in initial { startTouch(authenticator) }
            }

            var outcome: Result<Authenticator, AuthenticatorError>?
            var pending = inputs.makeAsyncIterator()
            loop: while let input = await pending.next() {
                switch input {
                case .event(.arrived(let descriptor)):
                    let uri = descriptor.uri
                    guard candidates[uri] == nil, !opening.contains(uri) else { continue }
                    removed.remove(uri)
                    opening.insert(uri)
                    group.addTask {
                        do throws(AuthenticatorError) {
                            feed.yield(.opened(try await self.open(uri: uri, deadline: deadline)))
                        } catch {
                            feed.yield(.openFailed(uri: uri, error))
                        }
                    }
                case .event(.removed(let uri)):
                    removed.insert(uri)
                    if let gone = candidates[uri] {
                        logger.debug("key removed while choosing", metadata: ["device": "\(uri)"])
                        // Closing ends its pending touch wait with a transport error at once.
                        if !borrowed.contains(uri) { await gone.close() }
                    }
                case .opened(let authenticator):
                    opening.remove(authenticator.uri)
                    if removed.contains(authenticator.uri) {
                        await authenticator.close()
                        continue
                    }
                    if candidates.isEmpty && touching.isEmpty {
                        // Nothing was present: the first key to arrive is used, as with one key.
                        outcome = .success(authenticator)
                        break loop
                    }
                    candidates[authenticator.uri] = authenticator
                    announce()
                    startTouch(authenticator)
                case .openFailed(let uri, let error):
                    opening.remove(uri)
                    if error.code == .permissionDenied { lastError = error }
                    logger.debug("arrived device is not a usable key", metadata: ["device": "\(uri)", "code": "\(error.code)"])
                case .touched(let uri):
                    guard let chosen = candidates[uri] else { continue }
                    logger.debug("key chosen by touch", metadata: ["device": "\(uri)"])
                    outcome = .success(chosen)
                    break loop
                case .touchFailed(let uri, var error):
                    touching.remove(uri)
                    // The event and the failed read race; a key that stopped answering because
                    // it is gone left for the same reason.
                    if removed.contains(uri) || error.code == .noDevice {
                        error = AuthenticatorError(
                            .removed, "The security key was removed.", deviceURI: uri, underlying: error)
                    }
                    logger.debug("key left the choice", metadata: ["device": "\(uri)", "code": "\(error.code)"])
                    if !Task.isCancelled { interaction?.activity(.deviceLeft(deviceURI: uri, error: error)) }
                    if let gone = candidates.removeValue(forKey: uri), !borrowed.contains(uri) {
                        await gone.close()
                    }
                    lastError = error
                    if error.code == .cancelled, Task.isCancelled {
                        outcome = .failure(.cancelled())
                        break loop
                    }
                    if touching.isEmpty && opening.isEmpty && candidates.isEmpty && error.code != .removed {
                        // Every key present declined or failed: report the last failure.
                        outcome = .failure(error)
                        break loop
                    }
                case .deadline:
                    break loop
                }
            }
            group.cancelAll()
            // The losers' waits end first (each sends its transport's cancel to its key); only
            // then are their connections closed, with those of keys opened too late to count.
            await group.waitForAll()
            feed.finish()
            while let late = await pending.next() {
                if case .opened(let authenticator) = late { candidates[authenticator.uri] = authenticator }
            }
            let chosen = try? outcome?.get()
            for (uri, authenticator) in candidates where uri != chosen?.uri && !borrowed.contains(uri) {
                await authenticator.close()
            }
            if let outcome { return outcome }
            if Task.isCancelled { return .failure(.cancelled()) }
            if let lastError, lastError.code == .permissionDenied {
                return .failure(
                    AuthenticatorError(
                        .permissionDenied,
                        "A security key is present but this user may not open it; add the udev rules or join the group that owns it.",
                        deviceURI: lastError.deviceURI, underlying: lastError))
            }
            if candidates.isEmpty, let lastError, lastError.code != .removed {
                return .failure(lastError)
            }
            if initial.isEmpty && candidates.isEmpty {
                return .failure(
                    AuthenticatorError(.noDevice, "No security key was found before the deadline; insert or tap one."))
            }
            return .failure(.timedOut("A touch on one of the security keys"))
        }
    }
}
