import Foundation
import Testing
import Transport

/// `BlockingIOThread.run(givingUpAt:cancelGivesUp:)`, for C calls nothing can interrupt
/// (pcsc-lite's `SCardBeginTransaction`): cancelling the caller gives up at once only when asked.
struct BlockingIOThreadGiveUpTests {
    /// Runs a job that blocks its thread for `blockFor`, cancels the caller after 100 ms, and
    /// returns how long the caller took to get its answer after the cancel, and the answer.
    func cancelWhileBlocked(cancelGivesUp: Bool, blockFor: Duration) async
        -> (after: Duration, code: TransportError.Code?)
    {
        let thread = BlockingIOThread(name: "giveup-test")
        defer { thread.shutdown() }
        let caller = Task { () async -> TransportError.Code? in
            do throws(TransportError) {
                _ = try await thread.run(
                    givingUpAt: .now + .seconds(30), cancelGivesUp: cancelGivesUp,
                    { () throws(TransportError) in Thread.sleep(forTimeInterval: Double(blockFor.components.seconds)) })
                return nil
            } catch {
                return error.code
            }
        }
        try? await Task.sleep(for: .milliseconds(100))
        let cancelled = ContinuousClock.now
        caller.cancel()
        let code = await caller.value
        return (ContinuousClock.now - cancelled, code)
    }

    @Test func cancellingGivesUpAtOnceWhenAsked() async {
        let result = await cancelWhileBlocked(cancelGivesUp: true, blockFor: .seconds(20))
        #expect(result.code == .cancelled)
        #expect(result.after < .seconds(5), "gave up \(result.after) after the cancel, not at once")
    }

    @Test func withoutItTheCallerWaitsForTheJob() async {
        let result = await cancelWhileBlocked(cancelGivesUp: false, blockFor: .seconds(1))
        #expect(result.code == nil)
        #expect(result.after > .milliseconds(600))
    }
}
