import CTAP2
import Transport

/// A change the inventory saw while watching: a key that arrived (and was inspected), or one
/// that left.
public enum FleetEvent: Sendable {
    /// A key is present (there when watching began, or plugged in since): its report.
    case arrived(FleetKeyReport)
    /// The key with this URI went away after it was reported.
    case left(uri: String)
}

extension FleetInventory {
    private enum Input: Sendable {
        case device(DeviceEvent)
        case inspected(FleetKeyReport)
    }

    /// Watches every discovery until the calling task is cancelled: each key present at the
    /// start and each that arrives later is inspected (as many at once as ``concurrency`` allows, each
    /// within ``keyTimeout``) and handed to `each` as ``FleetEvent/arrived(_:)``; a reported
    /// key that goes away is handed over as ``FleetEvent/left(uri:)`` at once. A key removed
    /// while it is being inspected is reported neither way. Readers without a FIDO card are
    /// not keys and are not reported.
    public func watch(_ each: (FleetEvent) async -> Void) async {
        let (inputs, feed) = AsyncStream<Input>.makeStream()
        let discoveries = directory.discoveries
        await withTaskGroup(of: Void.self) { group in
            for discovery in discoveries {
                group.addTask {
                    for await event in discovery.events() { feed.yield(.device(event)) }
                }
            }
            var queued: [DeviceDescriptor] = []
            var inspecting: [String: TransportKind] = [:]
            var gone = Set<String>()
            var reported = Set<String>()
            func startQueued() {
                var position = 0
                while position < queued.count {
                    let descriptor = queued[position]
                    let ofTransport = inspecting.values.filter { $0 == descriptor.transport }.count
                    guard concurrency.admits(descriptor.transport, total: inspecting.count, ofTransport: ofTransport) else {
                        position += 1
                        continue
                    }
                    queued.remove(at: position)
                    inspecting[descriptor.uri] = descriptor.transport
                    group.addTask {
                        // No overall bound: the key's own timeout bounds the inspection.
                        let report = await inspect(descriptor, overall: .after(.seconds(86_400 * 365)))
                        feed.yield(.inspected(report))
                    }
                }
            }
            for await input in inputs {
                switch input {
                case .device(.arrived(let descriptor)):
                    let uri = descriptor.uri
                    gone.remove(uri)
                    guard !reported.contains(uri), inspecting[uri] == nil,
                        !queued.contains(where: { $0.uri == uri })
                    else { continue }
                    queued.append(descriptor)
                    startQueued()
                case .device(.removed(let uri)):
                    queued.removeAll { $0.uri == uri }
                    if inspecting[uri] != nil { gone.insert(uri) }
                    if reported.remove(uri) != nil { await each(.left(uri: uri)) }
                case .inspected(let report):
                    let uri = report.descriptor.uri
                    inspecting[uri] = nil
                    startQueued()
                    if gone.remove(uri) != nil || Self.isNotAKey(report) { continue }
                    reported.insert(uri)
                    await each(.arrived(report))
                }
            }
            // The input stream ends when the watcher is cancelled: stop the pumps too.
            group.cancelAll()
        }
    }
}
