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
        state.withLock { $0.result = reply }
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
