import Authenticators
import CTAP2
import Logging
import Transport

/// The keys the daemon serves. A request claims keys before using them, so that no two
/// requests ever talk to the same key at once: it waits until at least one key is idle, takes
/// every idle key (they all blink; the one touched is used), and gives back the others as soon
/// as one is chosen. Requests that find every key busy wait in arrival order.
///
/// A key is open only while a request holds it: opened (and asked getInfo) when it arrives,
/// closed again, and opened for each claim. Other programs on the machine share the keys with
/// the daemon: a hidraw node is locked (`flock`, as libfido2 does) for as long as it is open, and
/// a daemon that kept it open would lock every other program out for its whole life. A key
/// another program holds when a request claims it is skipped for that claim (the others are
/// used), and claimed again later if none could be opened.
///
/// The keys come from an ``AuthenticatorDirectory``: its events say which arrive and leave,
/// and it opens them by URI.
actor KeyPool {
    struct Key {
        var descriptor: DeviceDescriptor
        /// Open while a request holds the key.
        var connection: (any AuthenticatorConnection)?
        var info: AuthenticatorInfo?
        var busy: Bool
    }

    /// How long a claim waits for one key that another program holds before it skips it.
    static let openWait: Duration = .seconds(2)
    /// How long a claim whose keys were all held elsewhere waits before it tries again.
    static let retryPause: Duration = .milliseconds(500)

    /// A change in the keys present, for the DeviceAdded and DeviceRemoved signals.
    enum Change: Sendable {
        case added(DeviceSummary)
        case removed(uri: String)
    }

    /// What ListDevices and DeviceAdded tell about one key.
    struct DeviceSummary: Sendable {
        var uri: String
        var transport: String
        var aaguid: String?
        var versions: [String]
        var busy: Bool
    }

    struct Waiter {
        var id: Int
        var excluding: Set<String>
        var continuation: CheckedContinuation<[String], any Error>
    }

    private var keys: [String: Key] = [:]
    private var order: [String] = []
    private var waiters: [Waiter] = []
    private var nextWaiter = 0
    let directory: AuthenticatorDirectory
    let logger: Logger
    let changes: AsyncStream<Change>
    private let changeContinuation: AsyncStream<Change>.Continuation

    /// How long a key that arrives has to open and answer getInfo before it is left out.
    static let arrivalWait: Duration = .seconds(5)

    init(directory: AuthenticatorDirectory, logger: Logger) {
        self.directory = directory
        self.logger = logger
        (changes, changeContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    /// Whether the keys present at start-up have been listed.
    private var enumerated = false
    /// ListDevices calls waiting for that first listing.
    private var enumerationWaiters: [CheckedContinuation<Void, Never>] = []

    /// Lists the keys present now (each opened once for its getInfo), then follows the
    /// directory's arrivals and removals until the calling task is cancelled.
    func follow() async {
        let listings = await directory.list(deadline: .after(Self.arrivalWait))
        for listing in listings where keys[listing.descriptor.uri] == nil {
            guard let info = listing.info else { continue }
            add(listing.descriptor, info: info)
        }
        enumerated = true
        for waiter in enumerationWaiters { waiter.resume() }
        enumerationWaiters = []
        await directory.forEachEvent { event in await self.handle(event) }
    }

    /// Returns once the keys present at start-up are known: the first ListDevices after the
    /// bus started the daemon (activation) answers with them, not with an empty list.
    func waitUntilEnumerated() async {
        if enumerated { return }
        await withCheckedContinuation { enumerationWaiters.append($0) }
    }

    private func add(_ descriptor: DeviceDescriptor, info: AuthenticatorInfo) {
        keys[descriptor.uri] = Key(descriptor: descriptor, connection: nil, info: info, busy: false)
        order.append(descriptor.uri)
        logger.info("key arrived", metadata: ["device": "\(descriptor.uri)"])
        changeContinuation.yield(.added(summary(descriptor.uri)))
        serveWaiters()
    }

    private func handle(_ event: DeviceEvent) async {
        switch event {
        case .arrived(let descriptor):
            guard keys[descriptor.uri] == nil else { return }
            // getInfo once, for ListDevices; a device that does not answer is not a key.
            let authenticator: Authenticator
            do throws(AuthenticatorError) {
                authenticator = try await directory.open(
                    uri: descriptor.uri, deadline: .after(Self.arrivalWait))
            } catch {
                logger.info(
                    "a key could not be opened",
                    metadata: ["device": "\(descriptor.uri)", "code": "\(error.code)"])
                return
            }
            let info = await authenticator.info
            // Closed until a request claims it: other programs may use the key meanwhile.
            await authenticator.close()
            guard keys[descriptor.uri] == nil else { return }
            add(descriptor, info: info)
        case .removed(let uri):
            guard let key = keys.removeValue(forKey: uri) else { return }
            order.removeAll { $0 == uri }
            // A request using the key sees its transport fail; the key is gone either way.
            await key.connection?.close()
            logger.info("key removed", metadata: ["device": "\(uri)"])
            changeContinuation.yield(.removed(uri: uri))
        }
    }

    /// Closes every key and fails the waiting requests (at shutdown).
    func closeAll() async {
        for waiter in waiters { waiter.continuation.resume(throwing: CancellationError()) }
        waiters = []
        enumerated = true
        for waiter in enumerationWaiters { waiter.resume() }
        enumerationWaiters = []
        for key in keys.values { await key.connection?.close() }
        keys = [:]
        order = []
        changeContinuation.finish()
    }

    func summary(_ uri: String) -> DeviceSummary {
        let key = keys[uri]
        return DeviceSummary(
            uri: uri, transport: key?.descriptor.transport.rawValue ?? "",
            aaguid: key?.info.map { "\($0.aaguid)" }, versions: key?.info?.versions.map(\.rawValue) ?? [],
            busy: key?.busy ?? false)
    }

    /// Every key, in arrival order.
    func list() -> [DeviceSummary] { order.map(summary) }

    /// Whether no key is present (the request then waits for one).
    var isEmpty: Bool { keys.isEmpty }

    /// Claims every idle key not in `excluding` and opens it, waiting (in arrival order,
    /// cancellably) until there is one that opens; nil when every key present is excluded (a
    /// sign-in tried them all).
    func claim(excluding: Set<String> = []) async throws -> [(String, any AuthenticatorConnection)]? {
        while true {
            guard let uris = try await claimIdle(excluding: excluding) else { return nil }
            let opened = await open(uris)
            if !opened.isEmpty { return opened }
            // Every key claimed is held by another program: let them go, and try again shortly.
            try await Task.sleep(for: Self.retryPause)
        }
    }

    /// Marks every idle key not in `excluding` busy, waiting until there is one.
    private func claimIdle(excluding: Set<String>) async throws -> [String]? {
        if !keys.isEmpty, keys.keys.allSatisfy(excluding.contains) { return nil }
        if waiters.isEmpty, let idle = takeIdle(excluding: excluding) { return idle }
        let id = nextWaiter
        nextWaiter += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiters.append(Waiter(id: id, excluding: excluding, continuation: continuation))
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    /// Opens the claimed keys at once (each waiting at most `openWait` for another program to
    /// let go of it); the ones that do not open are given back.
    private func open(_ uris: [String]) async -> [(String, any AuthenticatorConnection)] {
        let candidates = uris.filter { keys[$0] != nil }
        let logger = self.logger
        let directory = self.directory
        let results = await withTaskGroup(of: (String, (any AuthenticatorConnection)?).self) { group in
            for uri in candidates {
                group.addTask {
                    do throws(AuthenticatorError) {
                        return (uri, try await directory.connect(uri: uri, deadline: .after(Self.openWait)))
                    } catch {
                        logger.info(
                            "a key could not be opened for a request; skipped",
                            metadata: ["device": "\(uri)", "reason": "\(error)"])
                        return (uri, nil)
                    }
                }
            }
            var results: [(String, (any AuthenticatorConnection)?)] = []
            for await result in group { results.append(result) }
            return results
        }
        var opened: [(String, any AuthenticatorConnection)] = []
        var failed: [String] = []
        for uri in uris {
            guard let connection = results.first(where: { $0.0 == uri })?.1 else {
                failed.append(uri)
                continue
            }
            guard keys[uri] != nil else {
                // It left while it was being opened.
                await connection.close()
                continue
            }
            keys[uri]?.connection = connection
            opened.append((uri, connection))
        }
        if !failed.isEmpty { await release(failed) }
        return opened
    }

    private func cancelWaiter(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume(throwing: CancellationError())
    }

    private func takeIdle(excluding: Set<String>) -> [String]? {
        let idle = order.filter { keys[$0]?.busy == false && !excluding.contains($0) }
        guard !idle.isEmpty else { return nil }
        for uri in idle { keys[uri]?.busy = true }
        return idle
    }

    private func serveWaiters() {
        var index = 0
        while index < waiters.count {
            if let idle = takeIdle(excluding: waiters[index].excluding) {
                waiters.remove(at: index).continuation.resume(returning: idle)
            } else {
                index += 1
            }
        }
    }

    /// Gives back `uris` (a request ended, or chose another key): closes them, so that other
    /// programs can have them, and hands them to the next waiting request.
    func release(_ uris: [String]) async {
        for uri in uris {
            guard let connection = keys[uri]?.connection else { continue }
            keys[uri]?.connection = nil
            await connection.close()
        }
        for uri in uris where keys[uri] != nil { keys[uri]?.busy = false }
        serveWaiters()
    }
}
