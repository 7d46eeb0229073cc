#if canImport(Glibc)
    import Glibc
#endif
import Testing
import _SecurityKeyInternals

/// ProcessSignals without a signal: a body that ends by itself ends the call, its error is
/// thrown. (libdispatch hears a signal through a signalfd on Linux, so a signal sent to this
/// many-threaded test process may land on a thread that does not block it; what signals do is
/// tested on the programs: `fleet --watch` and `virtual serve` stopped by SIGINT and SIGTERM,
/// `virtual serve` power-cycled by SIGUSR1, a command cancelled by SIGINT, in CLITests.)
struct ProcessSignalsTests {
    static let usr2: [(number: Int32, name: String)] = [(SIGUSR2, "SIGUSR2")]

    @Test func aBodyThatEndsByItselfIsAnsweredEnd() async throws {
        #expect(try await ProcessSignals.runUntilInterrupted({}, by: Self.usr2) == "end")
        try await ProcessSignals.runCancellingOnInterrupt({}, by: Self.usr2, keeping: { _ in false }, giveUp: {})
    }

    @Test func aFailingBodyThrows() async {
        struct Failure: Error {}
        await #expect(throws: Failure.self) {
            _ = try await ProcessSignals.runUntilInterrupted({ throw Failure() }, by: Self.usr2)
        }
        await #expect(throws: Failure.self) {
            try await ProcessSignals.runCancellingOnInterrupt(
                { throw Failure() }, by: Self.usr2, keeping: { _ in false }, giveUp: {})
        }
    }

    @Test func theStreamEndsWhenStopped() async {
        let (stream, stop) = ProcessSignals.names(Self.usr2)
        stop()
        var received: [String] = []
        for await name in stream { received.append(name) }
        #expect(received.isEmpty)
    }
}
