#if canImport(Glibc)
    import Glibc
#endif
import Dispatch
import Synchronization

/// What the orchestrator started and must stop if it is interrupted (SIGINT, SIGTERM): child
/// processes, and PC/SC test beds, whose pcscd runs in its own session and would outlive it.
enum InterruptCleanup {
    private struct State: ~Copyable {
        var children: Set<Int32> = []
        var beds: [String: String] = [:]  // directory -> script
        var interrupted = false
    }

    private static let state = Mutex(State())
    // Kept alive for the life of the process; written once, on the main thread, before any signal.
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    /// Stops everything registered, then exits with 128 + the signal, when SIGINT or SIGTERM arrives.
    static func install() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { interrupted(by: number) }
            source.resume()
            sources.append(source)
        }
    }

    /// Records a child to stop on interrupt; false once an interrupt is being handled (the caller
    /// must then end the child itself).
    static func register(child pid: Int32) -> Bool {
        state.withLock {
            guard !$0.interrupted else { return false }
            $0.children.insert(pid)
            return true
        }
    }

    static func unregister(child pid: Int32) { state.withLock { _ = $0.children.remove(pid) } }
    static func register(bed directory: String, script: String) {
        state.withLock { $0.beds[directory] = script }
    }
    static func unregister(bed directory: String) {
        state.withLock { _ = $0.beds.removeValue(forKey: directory) }
    }

    private static func interrupted(by number: Int32) {
        // From here on nothing new is registered, so the snapshot is complete.
        let (children, beds) = state.withLock {
            $0.interrupted = true
            return ($0.children, $0.beds)
        }
        StandardStreams.err(
            "securitykey-bench: interrupted; stopping \(children.count) processes and \(beds.count) test beds."
        )
        for pid in children { kill(pid, SIGTERM) }
        for (directory, script) in beds {
            _ = try? SpawnedProcess(
                executable: script, arguments: ["stop", directory], environment: [:], errorPath: "/dev/null",
                track: false
            ).waitForExit(within: .seconds(10))
        }
        _exit(128 + number)
    }
}
