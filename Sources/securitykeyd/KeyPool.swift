import Authenticators
import CTAP2
import Logging
import Transport

/// The keys the daemon owns: one connection per key, opened when the key arrives and closed
/// when it leaves. A request claims keys before using them, so that no two requests ever
/// talk to the same key at once: it waits until at least one key is idle, takes every idle key
/// (they all blink; the one touched is used), and gives back the others as soon as one is
/// chosen. Requests that find every key busy wait in arrival order.
actor KeyPool {
    struct Key {
        var descriptor: DeviceDescriptor
        var connection: any AuthenticatorConnection
        var info: AuthenticatorInfo?
        var busy: Bool
    }

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
        var continuation: CheckedContinuation<[(String, any AuthenticatorConnection)], any Error>
    }

    private var keys: [String: Key] = [:]
    private var order: [String] = []
    private var waiters: [Waiter] = []
    private var nextWaiter = 0
    let logger: Logger
    let changes: AsyncStream<Change>
    private let changeContinuation: AsyncStream<Change>.Continuation

    init(logger: Logger) {
        self.logger = logger
        (changes, changeContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    /// Follows `discovery`'s arrivals and removals until the calling task is cancelled.
    func follow(_ discovery: any DeviceDiscovery) async {
        for await event in discovery.events() {
            if Task.isCancelled { break }
            switch event {
            case .arrived(let descriptor):
                guard keys[descriptor.uri] == nil else { continue }
                guard let connection = try? await discovery.open(uri: descriptor.uri) else {
                    logger.info("a key could not be opened", metadata: ["device": "\(descriptor.uri)"])
                    continue
                }
                // getInfo once, for ListDevices; a device that does not answer is not a key.
                guard
                    let authenticator = try? await Authenticator.open(
                        connection, ownsConnection: false, deadline: .after(.seconds(5)), logger: logger)
                else {
                    await connection.close()
                    continue
                }
                let info = await authenticator.info
                await authenticator.close()
                guard keys[descriptor.uri] == nil else {
                    await connection.close()
                    continue
                }
                keys[descriptor.uri] = Key(
                    descriptor: descriptor, connection: connection, info: info, busy: false)
                order.append(descriptor.uri)
                logger.info("key arrived", metadata: ["device": "\(descriptor.uri)"])
                changeContinuation.yield(.added(summary(descriptor.uri)))
                serveWaiters()
            case .removed(let uri):
                guard let key = keys.removeValue(forKey: uri) else { continue }
                order.removeAll { $0 == uri }
                // A request using the key sees its transport fail; the key is gone either way.
                await key.connection.close()
                logger.info("key removed", metadata: ["device": "\(uri)"])
                changeContinuation.yield(.removed(uri: uri))
            }
        }
    }

    /// Closes every key and fails the waiting requests (at shutdown).
    func closeAll() async {
        for waiter in waiters { waiter.continuation.resume(throwing: CancellationError()) }
        waiters = []
        for key in keys.values { await key.connection.close() }
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

    /// Claims every idle key not in `excluding`, waiting (in arrival order, cancellably) until
    /// there is one; nil when every key present is excluded (a sign-in tried them all).
    func claim(excluding: Set<String> = []) async throws -> [(String, any AuthenticatorConnection)]? {
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

    private func cancelWaiter(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume(throwing: CancellationError())
    }

    private func takeIdle(excluding: Set<String>) -> [(String, any AuthenticatorConnection)]? {
        let idle = order.filter { keys[$0]?.busy == false && !excluding.contains($0) }
        guard !idle.isEmpty else { return nil }
        var claimed: [(String, any AuthenticatorConnection)] = []
        for uri in idle {
            guard let key = keys[uri] else { continue }
            keys[uri]?.busy = true
            claimed.append((uri, key.connection))
        }
        return claimed
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

    /// Gives back `uris` (a request ended, or chose another key).
    func release(_ uris: [String]) {
        for uri in uris where keys[uri] != nil { keys[uri]?.busy = false }
        serveWaiters()
    }
}
