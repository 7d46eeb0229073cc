import Synchronization
import Transport

/// A CTAP2 message the card is working on while the reader polls NFCCTAP_GETRESPONSE
/// (CTAP 2.1 §11.3.3). Runs as a child task of the card server's connection scope.
final class VPCDPendingRequest: Sendable {
    private struct State: ~Copyable {
        var status = KeepaliveStatus.processing
        var result: [UInt8]?
        var cancelRequested = false
        var waiterGone = false
        var waiter: CheckedContinuation<Void, Never>?
        /// Who waits for the result (``waitForResult(within:)``), and whether it stopped waiting.
        var resultWaiter: CheckedContinuation<Void, Never>?
        var resultWaiterGone = false
    }

    private let state = Mutex(State())

    /// CTAP2_ERR_KEEPALIVE_CANCEL, answered if the handler returns nothing better.
    static let keepaliveCancel: UInt8 = 0x2D

    /// The handler's last keepalive status.
    var status: KeepaliveStatus { state.withLock { $0.status } }
    /// The reply, once the handler finished.
    var result: [UInt8]? { state.withLock { $0.result } }

    /// Asks the handler to stop (NFCCTAP_GETRESPONSE with P1 0x11, or power off).
    func requestCancel() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.cancelRequested = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// Runs the handler to completion, cancelling its task when a cancel is requested.
    func run(_ handler: any CTAPMessageHandler, message: [UInt8]) async {
        let reply = await withTaskGroup(of: [UInt8]?.self) { group in
            group.addTask {
                await handler.handleCBOR(message) { [self] status in
                    self.state.withLock { $0.status = status }
                }
            }
            group.addTask { [self] in
                await self.waitForCancelRequest()
                return nil
            }
            var reply: [UInt8] = [Self.keepaliveCancel]
            while let finished = await group.next() {
                if let finished { reply = finished }
                group.cancelAll()
            }
            return reply
        }
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.result = reply
            defer { s.resultWaiter = nil }
            return s.resultWaiter
        }
        waiter?.resume()
    }

    /// Returns once the handler has finished, or when `window` has passed, whichever comes
    /// first (the reply to the command that started the request, CTAP 2.1 §11.3.3). One caller
    /// at a time.
    func waitForResult(within window: Duration) async {
        if result != nil { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.resultArrival() }
            group.addTask { try? await Task.sleep(for: window) }
            await group.next()
            group.cancelAll()
        }
    }

    private func resultArrival() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.result != nil || s.resultWaiterGone { return true }
                    s.resultWaiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                s.resultWaiterGone = true
                defer { s.resultWaiter = nil }
                return s.resultWaiter
            }
            waiter?.resume()
        }
    }

    private func waitForCancelRequest() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.cancelRequested || s.waiterGone { return true }
                    s.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                s.waiterGone = true
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume()
        }
    }
}
