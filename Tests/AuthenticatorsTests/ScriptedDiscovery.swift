import Synchronization
import Transport
import VirtualAuthenticator

/// A discovery whose devices the test puts in and takes out, reporting each change as a
/// hotplug event, over in-process virtual keys. URIs are `test:NAME`.
final class ScriptedDiscovery: DeviceDiscovery {
    let scheme = "test"
    private let state = Mutex<(present: [(String, any CTAPMessageHandler)], watchers: [AsyncStream<DeviceEvent>.Continuation])>(([], []))
    /// How many times `events()` was started (each consumer starts it once).
    let subscriptions = Mutex(0)

    init(_ keys: [(String, any CTAPMessageHandler)] = []) {
        state.withLock { $0.present = keys.map { ("test:\($0.0)", $0.1) } }
    }

    static func descriptor(_ uri: String) -> DeviceDescriptor {
        DeviceDescriptor(uri: uri, transport: .inProcess, product: "scripted")
    }

    func devices() async throws(TransportError) -> [DeviceDescriptor] {
        state.withLock { $0.present.map { Self.descriptor($0.0) } }
    }

    func open(uri: String) async throws(TransportError) -> any AuthenticatorConnection {
        guard let handler = state.withLock({ $0.present.first { $0.0 == uri }?.1 }) else {
            throw TransportError(.noDevice, "No scripted device at \(uri).")
        }
        return InProcessConnection(handler: handler, uri: uri)
    }

    func events() -> AsyncStream<DeviceEvent> {
        subscriptions.withLock { $0 += 1 }
        let (stream, continuation) = AsyncStream<DeviceEvent>.makeStream()
        state.withLock { state in
            for (uri, _) in state.present { continuation.yield(.arrived(Self.descriptor(uri))) }
            state.watchers.append(continuation)
        }
        return stream
    }

    /// Plugs a key in.
    func insert(_ name: String, _ handler: any CTAPMessageHandler) {
        let uri = "test:\(name)"
        let watchers = state.withLock { state in
            state.present.append((uri, handler))
            return state.watchers
        }
        for watcher in watchers { watcher.yield(.arrived(Self.descriptor(uri))) }
    }

    /// Pulls a key out.
    func remove(_ name: String) {
        let uri = "test:\(name)"
        let watchers = state.withLock { state in
            state.present.removeAll { $0.0 == uri }
            return state.watchers
        }
        for watcher in watchers { watcher.yield(.removed(uri: uri)) }
    }
}
