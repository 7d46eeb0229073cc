import Dispatch
import Synchronization
import Transport

/// What one hand-off to a device's I/O thread costs: an empty job sent with
/// ``BlockingIOThread/run(skipIfCancelled:_:onCancel:)`` and the task resumed after it. Every
/// CTAPHID or PC/SC operation of our host pays one such round trip (libfido2, synchronous on one
/// thread, pays none), so it is the floor under the wall-time ratios of the host comparison.
enum ThreadHopBenchmarks {
    static let section = BenchmarkSection(
        name: "hop", summary: "round trip of an empty job to a device I/O thread and back to the task",
        run: run)

    static let warmUp = 2_000
    static let samples = 20_000

    static func run() {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<LatencySummary?>(nil)
        Task.detached {
            let thread = BlockingIOThread(name: "bench hop")
            var latencies: [UInt64] = []
            latencies.reserveCapacity(samples)
            let clock = ContinuousClock()
            for index in 0..<(warmUp + samples) {
                let start = clock.now
                _ = try? await thread.run { () throws(TransportError) in index }
                let elapsed = start.duration(to: clock.now)
                if index >= warmUp { latencies.append(elapsed.nanoseconds) }
            }
            thread.shutdown()
            let summary = LatencySummary(latencies)
            result.withLock { $0 = summary }
            done.signal()
        }
        done.wait()
        guard let summary = result.withLock({ $0 }) else { return }
        StandardStreams.out(
            "hop: task -> I/O thread -> task, empty job (\(summary.count) samples): median "
                + "\(Figures.fixed(summary.median / 1000, decimals: 1)) µs, p95 \(Figures.fixed(summary.p95 / 1000, decimals: 1)) µs"
        )
    }
}
