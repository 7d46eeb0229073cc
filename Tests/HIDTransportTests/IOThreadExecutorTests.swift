#if canImport(Glibc)
    import Glibc
#endif
import HIDTransport
import Synchronization
import Testing
import Transport
import CTAPHID

/// The calling thread's name as Linux keeps it (`/proc/thread-self/comm`, at most 15 bytes).
private func currentThreadName() -> String {
    let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 64)
    let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return "" }
    return String(decoding: bytes[..<count].filter { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
}

/// An in-memory device whose pipe offers an I/O thread (a real ``BlockingIOThread``) as its
/// preferred executor, as a hidraw pipe does; what it moves is MemoryReportPipe's.
private final class ThreadedMemoryPipe: CTAPHIDReportPipe {
    let inner: MemoryReportPipe
    let thread: BlockingIOThread
    init(_ inner: MemoryReportPipe, threadName: String) {
        self.inner = inner
        self.thread = BlockingIOThread(name: threadName, closedMessage: "closed")
    }
    var reportSize: Int { inner.reportSize }
    var preferredTaskExecutor: (any TaskExecutor)? { thread }
    func write(_ report: [UInt8]) async throws(TransportError) { try await inner.write(report) }
    func read(timeout: Duration) async throws(TransportError) -> [UInt8]? { try await inner.read(timeout: timeout) }
    func close() async { thread.shutdown() }
}

/// A caller that runs its operations on a device's I/O thread (`withTaskExecutorPreference`
/// with the connection's `preferredTaskExecutor`) gets the same answers, keepalives and
/// cancellation as one on the cooperative pool, and its code really runs on that thread.
@Suite struct IOThreadExecutorTests {
    static let descriptor = DeviceDescriptor(uri: "memory:threaded", transport: .inProcess)

    @Test func aConnectionRunsOnItsPipesThreadWithTheSameAnswers() async throws {
        let threadName = "memory-pipe-1"
        let connection = try await CTAPHIDConnection.open(
            pipe: ThreadedMemoryPipe(MemoryReportPipe(), threadName: threadName), descriptor: Self.descriptor,
            timeout: .seconds(10))
        let executor = try #require(connection.preferredTaskExecutor)
        #expect(currentThreadName() != threadName)
        let payload = (0..<7000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let (reply, before, after) = try await withTaskExecutorPreference(executor) {
            let before = currentThreadName()
            let reply = try await connection.transact(.cbor, payload: payload, timeout: .seconds(10))
            return (reply, before, currentThreadName())
        }
        // MemoryReportPipe's device echoes a CBOR request after a zero status.
        #expect(reply == [0] + payload)
        #expect(before == threadName)
        #expect(after == threadName)
        // And from the pool again, on the same connection.
        #expect(try await connection.ping([1, 2, 3]) == [1, 2, 3])
        await connection.close()
    }

    @Test func cancellingAnOperationOnTheIOThreadStopsIt() async throws {
        let memory = MemoryReportPipe(hostility: .keepaliveForever, hostileRequests: 1)
        let connection = try await CTAPHIDConnection.open(
            pipe: ThreadedMemoryPipe(memory, threadName: "memory-pipe-2"), descriptor: Self.descriptor,
            timeout: .seconds(10))
        let executor = try #require(connection.preferredTaskExecutor)
        let (started, continuation) = AsyncStream.makeStream(of: Void.self)
        let request = Task(executorPreference: executor) {
            try await connection.transact(
                .cbor, payload: [0x02], deadline: .after(.seconds(30)),
                keepalive: { _ in continuation.yield() })
        }
        for await _ in started { break }
        let clock = ContinuousClock()
        let cancelledAt = clock.now
        request.cancel()
        await #expect(throws: TransportError.self) { try await request.value }
        // Reads wait in slices of CTAPHIDConnection.readSlice, so the cancel lands within one.
        #expect(cancelledAt.duration(to: clock.now) < .seconds(5))
        #expect(memory.cancels == 1)
        // The next request on the same connection works (from the I/O thread again).
        let next = try await withTaskExecutorPreference(executor) {
            try await connection.ping([7], timeout: .seconds(10))
        }
        #expect(next == [7])
        await connection.close()
    }

    @Test func aTaskPreferringAStoppedThreadStillFinishes() async throws {
        let thread = BlockingIOThread(name: "executor-test", closedMessage: "stopped")
        let onThread = try await withTaskExecutorPreference(thread) {
            try await thread.run { () throws(TransportError) in currentThreadName() }
        }
        #expect(onThread == "executor-test")
        thread.shutdown()
        // Jobs of a task that still prefers the stopped thread run elsewhere instead of being lost;
        // blocking work is refused with the thread's `closed` error.
        let outcome: Result<Int, TransportError> = await withTaskExecutorPreference(thread) {
            try? await Task.sleep(for: .milliseconds(10))
            do throws(TransportError) {
                return .success(try await thread.run { () throws(TransportError) in 1 })
            } catch {
                return .failure(error)
            }
        }
        guard case .failure(let error) = outcome else {
            Issue.record("run on a stopped thread succeeded")
            return
        }
        #expect(error.code == .closed)
        #expect(error.message == "stopped")
    }
}
