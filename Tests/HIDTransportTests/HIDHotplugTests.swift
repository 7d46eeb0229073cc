import Foundation
import Synchronization
import HIDTransport
import Testing
import Transport

/// `HIDDiscovery.events()` on this host, which has no hidraw nodes and no udevd (the kernel
/// source is used): the watch runs, reports nothing, and ends when the consumer stops. Keys
/// arriving and leaving are tested in the QEMU guest (UHIDServerTests).
@Suite struct HIDHotplugTests {
    @Test func watchReportsNothingWithoutKeysAndEndsWhenStopped() async throws {
        let nodes = (try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []
        let hidraw = nodes.filter { $0.hasPrefix("hidraw") }
        let events = EventLog()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { for await event in HIDDiscovery().events() { events.append(event) } }
            var started = false
            for _ in 0..<100 where !started {
                try await Task.sleep(for: .milliseconds(20))
                started = threads(named: "hid hotplug") > 0
            }
            #expect(started, "no hotplug watch thread appeared")
            try await Task.sleep(for: .milliseconds(300))
            if hidraw.isEmpty { #expect(events.all.isEmpty, "\(events.all)") }
            // Still waiting on udev (a watch that could not start would have ended by now).
            #expect(threads(named: "hid hotplug") == 1)
            group.cancelAll()
        }
        var left = threads(named: "hid hotplug")
        for _ in 0..<100 where left > 0 {
            try await Task.sleep(for: .milliseconds(20))
            left = threads(named: "hid hotplug")
        }
        #expect(left == 0, "the hotplug watch thread still runs after the stream ended")
    }
}

/// Events collected from the consuming task.
final class EventLog: Sendable {
    private let events = Mutex<[DeviceEvent]>([])
    func append(_ event: DeviceEvent) { events.withLock { $0.append(event) } }
    var all: [DeviceEvent] { events.withLock { $0 } }
}

/// The threads of this process with this kernel name.
func threads(named name: String) -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
        return comm?.trimmingCharacters(in: .whitespacesAndNewlines) == name
    }.count
}
