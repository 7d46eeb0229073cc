import _SecurityKeyInternals
import FoundationEssentials
import SDBus
import SecurityKeyDaemonClient
import SecurityKeys
import Synchronization
import Transport

/// One ceremony on the daemon's keys: claims them, performs the request with a controller of
/// its own, turns the controller's statuses into StateChanged signals, and stops at the first
/// of: the ceremony's end, an interruption (CancelRequest, the caller leaving, shutdown) or the
/// deadline.
struct RequestRun: Sendable {
    let daemon: Daemon
    let id: String
    let owner: String
    let ceremony: Daemon.Ceremony

    enum Step: Sendable {
        case finished(Result<String, DaemonError>)
        case interrupted(Daemon.Interruption)
    }

    func run(interruptions: AsyncStream<Daemon.Interruption>) async -> Result<String, DaemonError> {
        // Keys claimed and not yet given back; released whatever happens.
        let claimed = ClaimedKeys()
        let pool = daemon.pool
        let step = await withTaskGroup(of: Step?.self) { group in
            group.addTask { .finished(await self.performCeremony(claimed: claimed)) }
            group.addTask {
                for await why in interruptions { return .interrupted(why) }
                return nil
            }
            group.addTask {
                // The claim wait is bounded too; the ceremony's own deadline starts once keys are held.
                // In slices: one Task.sleep kept ~1 KiB per ended request until its timeout.
                try? await CancellableSleep.sleep(until: .now + ceremony.timeout + .seconds(2))
                return Task.isCancelled ? nil : .interrupted(.timedOut)
            }
            var first: Step?
            for await result in group {
                if let result {
                    first = result
                    break
                }
            }
            group.cancelAll()
            return first
        }
        await pool.release(claimed.uris.withLock { $0 })
        switch step {
        case .finished(let result): return result
        case .interrupted(.cancelledByCaller):
            return .failure(DaemonError(.abort, "The caller cancelled the request."))
        case .interrupted(.callerLeft): return .failure(DaemonError(.abort, "The caller left the bus."))
        case .interrupted(.shuttingDown): return .failure(DaemonError(.abort, "The daemon is stopping."))
        case .interrupted(.timedOut), nil:
            return .failure(DaemonError(.notAllowed, "The request's deadline passed."))
        }
    }

    /// Runs the ceremony on the keys claimed; a sign-in whose keys hold none of the allowed
    /// credentials tries the other keys as they become idle, until every key was tried.
    func performCeremony(claimed: ClaimedKeys) async -> Result<String, DaemonError> {
        let pool = daemon.pool
        if await pool.isEmpty { await daemon.signal(id, to: owner, .waiting) }
        var tried: Set<String> = []
        var last: SecurityKeyError?
        while true {
            let claim: [(String, any AuthenticatorConnection)]?
            do { claim = try await pool.claim(excluding: tried) } catch {
                return .failure(DaemonError(.abort, "The request was cancelled."))
            }
            guard let keys = claim else {
                return .failure(
                    last.map(DaemonError.init) ?? DaemonError(.notAllowed, "No key could serve the request."))
            }
            claimed.uris.withLock { $0 = keys.map(\.0) }
            let result = await attempt(on: keys, claimed: claimed)
            switch result {
            case .success(let json): return .success(json)
            case .failure(let error):
                guard error.code == .noCredentials, case .assertion = ceremony, !Task.isCancelled else {
                    return .failure(DaemonError(error))
                }
                last = error
                // The key that was used (the others were given back when it was chosen).
                let used = claimed.uris.withLock { uris in
                    defer { uris = [] }
                    return uris
                }
                tried.formUnion(used)
                await pool.release(used)
            }
        }
    }

    func attempt(on keys: [(String, any AuthenticatorConnection)], claimed: ClaimedKeys) async
        -> Result<String, SecurityKeyError>
    {
        let controller = SecurityKeyAuthorizationController(
            sources: keys.map { SecurityKeySource.connection($0.1) },
            interaction: RequestInteraction(daemon: daemon, id: id), logger: daemon.logger)
        do throws(SecurityKeyError) {
            let result = try await controller.perform(
                ceremony, onStatus: { await self.report($0, claimed: claimed) })
            switch result {
            case .registration(let registration): return .success(registration.webAuthnJSON)
            case .assertion(let assertion): return .success(assertion.webAuthnJSON)
            }
        } catch {
            return .failure(error)
        }
    }

    /// A controller status as a StateChanged signal (credentialsd's USB state names); a chosen
    /// key lets the others go to waiting requests.
    func report(_ status: SecurityKeyStatus, claimed: ClaimedKeys) async {
        switch status {
        case .waitingForKey: await daemon.signal(id, to: owner, .waiting)
        case .selectingKey(let count):
            await daemon.signal(
                id, to: owner, .selectingDevice,
                [BusDictionaryEntry("count", .int32(Int32(clamping: count)))])
        case .keySelected(let uri):
            let others = claimed.uris.withLock { uris in
                defer { uris = uris.filter { $0 == uri } }
                return uris.filter { $0 != uri }
            }
            await daemon.pool.release(others)
            await daemon.signal(id, to: owner, .connected, [BusDictionaryEntry("device", .string(uri))])
        case .touchNeeded(let uri):
            await daemon.signal(
                id, to: owner, .needsUserPresence, [BusDictionaryEntry("device", .string(uri))])
        case .userVerificationRetry(let left):
            await daemon.signal(
                id, to: owner, .needsUserVerification,
                [BusDictionaryEntry("attempts_left", .int32(Int32(clamping: left ?? -1)))])
        // NEEDS_PIN and SELECT_CREDENTIAL are sent when the daemon is ready for the answer.
        case .pinNeeded, .selectingAccount, .done: break
        }
    }
}

/// The keys a request holds, shared by its ceremony and its status reporting.
final class ClaimedKeys: Sendable {
    let uris = Mutex<[String]>([])
}
