import Foundation
import NFCTransport
import Testing
import Transport

/// `PCSCDiscovery.events()` without pcscd, and ending when the consumer stops iterating.
@Suite struct PCSCEventsTests {
    /// Without pcscd the stream stays open and empty (the watch retries, for a pcscd started
    /// later), and stopping the iteration ends it.
    @Test func withoutPCSCDTheStreamWaitsEmpty() async throws {
        let env = ProcessInfo.processInfo.environment
        guard env["PCSCLITE_CSOCK_NAME"] == nil,
            !FileManager.default.fileExists(atPath: "/run/pcscd/pcscd.comm")
        else { return }  // a pcscd runs here; the bed tests cover the other case
        let events = try await withThrowingTaskGroup(of: [DeviceEvent]?.self) { group in
            group.addTask {
                var events: [DeviceEvent] = []
                for await event in PCSCDiscovery().events() { events.append(event) }
                return events
            }
            group.addTask {
                try await Task.sleep(for: .milliseconds(1500))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(events == nil, "the stream ended or yielded without pcscd: \(events ?? [])")
    }

    /// The watch thread waits in SCardGetStatusChange; ending the iteration must cancel that
    /// wait and end the thread (seen in /proc as the thread named "pcsc events").
    @Test func stoppingIterationEndsTheWatchThread() async throws {
        guard ProcessInfo.processInfo.environment["PCSCLITE_CSOCK_NAME"] != nil else {
            Issue.record(
                "Run under `scripts/pcsc-testbed.sh run -- swift test --skip-build --filter NFCTransportTests`."
            )
            return
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in PCSCDiscovery().events() {} }
            var started = false
            for _ in 0..<100 where !started {
                try await Task.sleep(for: .milliseconds(20))
                started = watchThreads() > 0
            }
            #expect(started, "no watch thread appeared")
            // Let it settle into its wait, then stop iterating.
            try await Task.sleep(for: .milliseconds(300))
            group.cancelAll()
        }
        var left = watchThreads()
        for _ in 0..<100 where left > 0 {
            try await Task.sleep(for: .milliseconds(20))
            left = watchThreads()
        }
        #expect(left == 0, "the watch thread still runs after the stream ended")
    }
}

/// The threads of this process named "pcsc events" (the kernel keeps the first 15 bytes).
private func watchThreads() -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
        return name?.trimmingCharacters(in: .whitespacesAndNewlines) == "pcsc events"
    }.count
}
