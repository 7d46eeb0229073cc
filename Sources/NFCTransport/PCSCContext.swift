import CPCSCLite
import Synchronization
import Transport

/// One pcsc-lite context and the dedicated thread that owns it.
///
/// Every method but ``cancel()`` must run on ``thread`` (through ``BlockingIOThread/run(skipIfCancelled:_:onCancel:)``):
/// pcsc-lite wants one context per thread. Each method wraps exactly one C function and turns its
/// return code into a ``TransportError`` in one place.
final class PCSCContext: @unchecked Sendable {
    /// The thread every call on this context runs on.
    let thread: BlockingIOThread
    // Written once on the thread before any other use, read by `cancel()` from any thread.
    private let handle = Mutex<SCARDCONTEXT?>(nil)

    /// Reader name pcsc-lite uses to report readers coming and going.
    static let plugAndPlayReader = "\\\\?PnP?\\Notification"

    private init(thread: BlockingIOThread) {
        self.thread = thread
    }

    /// Establishes a context on a new dedicated thread.
    static func establish(name: String) async throws(TransportError) -> PCSCContext {
        let context = PCSCContext(
            thread: BlockingIOThread(name: name, closedMessage: "The PC/SC connection is closed."))
        do {
            try await context.thread.run { () throws(TransportError) in try context.establishContext() }
        } catch {
            context.thread.shutdown()
            throw error
        }
        return context
    }

    /// Establishes a context from a job already running on `thread`, which then owns it (for a
    /// long-running job that holds its thread, like an event watch).
    static func establishOnCurrentThread(_ thread: BlockingIOThread) throws(TransportError) -> PCSCContext {
        let context = PCSCContext(thread: thread)
        try context.establishContext()
        return context
    }

    /// Releases the context from a job running on its thread (the thread is left running).
    func releaseOnCurrentThread() {
        releaseContext()
    }

    /// Releases the context and ends its thread.
    func release() async {
        _ = try? await thread.run { [self] () throws(TransportError) in self.releaseContext() }
        thread.shutdown()
    }

    private var context: SCARDCONTEXT {
        get throws(TransportError) {
            guard let value = handle.withLock({ $0 }) else {
                throw TransportError(.closed, "The PC/SC context is released.")
            }
            return value
        }
    }

    /// `SCardEstablishContext`.
    private func establishContext() throws(TransportError) {
        var value: SCARDCONTEXT = 0
        let rc = PCSCReturnCode(SCardEstablishContext(DWORD(SCARD_SCOPE_SYSTEM), nil, nil, &value))
        guard rc == .success else { throw rc.transportError("SCardEstablishContext") }
        handle.withLock { $0 = value }
    }

    /// `SCardReleaseContext`.
    private func releaseContext() {
        guard
            let value = handle.withLock({ h -> SCARDCONTEXT? in
                defer { h = nil }; return h
            })
        else { return }
        _ = SCardReleaseContext(value)
    }

    /// Disconnects `card` (if any), releases the context and ends the thread without waiting:
    /// for a connection dropped without ``PCSCConnection/close()``.
    func releaseDetached(card: SCARDHANDLE?) {
        thread.shutdown { [self] in
            if let card { self.disconnect(card) }
            self.releaseContext()
        }
    }

    /// `SCardCancel`: ends a pending `SCardGetStatusChange`. Safe from any thread.
    func cancel() {
        guard let value = handle.withLock({ $0 }) else { return }
        _ = SCardCancel(value)
    }

    /// `SCardListReaders`: the reader names, in pcsc-lite's order; empty when there are none.
    func listReaders() throws(TransportError) -> [String] {
        let context = try context
        for _ in 0..<4 {  // readers may come between the two calls; retry a few times
            var size: DWORD = 0
            var rc = PCSCReturnCode(SCardListReaders(context, nil, nil, &size))
            if rc == .noReadersAvailable { return [] }
            guard rc == .success else { throw rc.transportError("SCardListReaders") }
            guard size > 0, size <= 65536 else { return [] }
            var buffer = [CChar](repeating: 0, count: Int(size))
            rc = PCSCReturnCode(SCardListReaders(context, nil, &buffer, &size))
            if rc == .insufficientBuffer { continue }
            if rc == .noReadersAvailable { return [] }
            guard rc == .success else { throw rc.transportError("SCardListReaders") }
            // A multi-string: names separated by NUL, ended by an empty name.
            let count = min(Int(size), buffer.count)
            return buffer[..<count].split(separator: 0).map {
                String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        throw PCSCReturnCode.insufficientBuffer.transportError("SCardListReaders")
    }

    /// `SCardGetStatusChange`: waits up to `timeout` for any of `states` to differ from its
    /// current state, and returns the new states. Returns nil when the timeout passed.
    func getStatusChange(_ states: [PCSCReaderState], timeout: Duration) throws(TransportError)
        -> [PCSCReaderState]?
    {
        let context = try context
        let millis = DWORD(clamping: timeout.wholeMilliseconds)
        // The C structs point at the names, so keep NUL-terminated copies alive for the call.
        let names = states.map { Array($0.reader.utf8CString) }
        var result: [PCSCReaderState] = []
        var rc = PCSCReturnCode.success
        withCStrings(names) { pointers in
            var raw = [SCARD_READERSTATE](repeating: SCARD_READERSTATE(), count: states.count)
            for i in raw.indices {
                raw[i].szReader = pointers[i]
                raw[i].dwCurrentState = DWORD(states[i].currentState)
            }
            rc = PCSCReturnCode(SCardGetStatusChange(context, millis, &raw, DWORD(raw.count)))
            if rc == .success {
                result = raw.indices.map { i in
                    var state = states[i]
                    state.eventState = UInt32(truncatingIfNeeded: raw[i].dwEventState)
                    let atrCount = min(Int(raw[i].cbAtr), Int(MAX_ATR_SIZE))
                    state.atr = withUnsafeBytes(of: raw[i].rgbAtr) { Array($0.prefix(atrCount)) }
                    return state
                }
            }
        }
        if rc == .timeout { return nil }
        guard rc == .success else { throw rc.transportError("SCardGetStatusChange") }
        return result
    }

    /// `SCardConnect` in shared mode with T=0 or T=1: the card handle and active protocol.
    func connect(reader: String) throws(TransportError) -> (card: SCARDHANDLE, activeProtocol: DWORD) {
        let context = try context
        var card: SCARDHANDLE = 0
        var active: DWORD = 0
        let rc = PCSCReturnCode(
            SCardConnect(
                context, reader, DWORD(SCARD_SHARE_SHARED), DWORD(SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1),
                &card, &active))
        guard rc == .success else { throw rc.transportError("SCardConnect") }
        return (card, active)
    }

    /// `SCardBeginTransaction`: holds the card for this handle alone. pcsc-lite (1.9.9 here)
    /// waits without a timeout while another handle holds it, so callers bound it with
    /// ``BlockingIOThread/run(givingUpAt:_:onCancel:)``.
    func beginTransaction(_ card: SCARDHANDLE) throws(TransportError) {
        let rc = PCSCReturnCode(SCardBeginTransaction(card))
        guard rc == .success else { throw rc.transportError("SCardBeginTransaction") }
    }

    /// `SCardReconnect` in shared mode with T=0 or T=1, leaving the card as it is: makes a
    /// handle usable again after another application reset the card (`SCARD_W_RESET_CARD`).
    /// Returns the active protocol.
    func reconnect(_ card: SCARDHANDLE) throws(TransportError) -> DWORD {
        var active: DWORD = 0
        let rc = PCSCReturnCode(
            SCardReconnect(
                card, DWORD(SCARD_SHARE_SHARED), DWORD(SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1),
                DWORD(SCARD_LEAVE_CARD), &active))
        guard rc == .success else { throw rc.transportError("SCardReconnect") }
        return active
    }

    /// `SCardEndTransaction`, leaving the card as it is (the FIDO applet stays selected).
    func endTransaction(_ card: SCARDHANDLE) {
        _ = SCardEndTransaction(card, DWORD(SCARD_LEAVE_CARD))
    }

    /// `SCardDisconnect`, leaving the card as it is.
    func disconnect(_ card: SCARDHANDLE) {
        _ = SCardDisconnect(card, DWORD(SCARD_LEAVE_CARD))
    }

    /// `SCardTransmit`: sends one APDU and returns the raw response (data + SW1 SW2).
    func transmit(_ card: SCARDHANDLE, activeProtocol: DWORD, _ apdu: [UInt8]) throws(TransportError)
        -> [UInt8]
    {
        // Room for the longest extended response, left uninitialised: zero-filling 64 KiB for
        // every APDU was most of the host's instructions per PC/SC operation. Only the bytes
        // pcsc-lite reports as written are kept.
        let capacity = 65536 + 2
        var rc = PCSCReturnCode.success
        let response = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            var length = DWORD(capacity)
            rc = withUnsafePointer(
                to: activeProtocol == DWORD(SCARD_PROTOCOL_T0) ? g_rgSCardT0Pci : g_rgSCardT1Pci
            ) {
                pci in
                PCSCReturnCode(
                    SCardTransmit(card, pci, apdu, DWORD(apdu.count), nil, buffer.baseAddress, &length))
            }
            initialized = rc == .success ? Int(min(length, DWORD(capacity))) : 0
        }
        guard rc == .success else { throw rc.transportError("SCardTransmit") }
        // A copy the size of the answer, so a short response does not hold 64 KiB.
        return Array(response[...])
    }

    /// `SCardStatus`: whether the card is still present and powered, and its ATR.
    func status(_ card: SCARDHANDLE) throws(TransportError) -> (state: UInt32, atr: [UInt8]) {
        var state: DWORD = 0
        var proto: DWORD = 0
        var atr = [UInt8](repeating: 0, count: Int(MAX_ATR_SIZE))
        var atrLength = DWORD(atr.count)
        var nameLength: DWORD = 0
        let rc = PCSCReturnCode(SCardStatus(card, nil, &nameLength, &state, &proto, &atr, &atrLength))
        guard rc == .success else { throw rc.transportError("SCardStatus") }
        return (UInt32(truncatingIfNeeded: state), Array(atr.prefix(Int(min(atrLength, DWORD(atr.count))))))
    }
}

/// Calls `body` with C string pointers to `strings`, valid for the call only.
private func withCStrings(_ strings: [[CChar]], _ body: ([UnsafePointer<CChar>?]) -> Void) {
    var pointers: [UnsafePointer<CChar>?] = []
    func step(_ index: Int) {
        if index == strings.count { return body(pointers) }
        strings[index].withUnsafeBufferPointer { buffer in
            pointers.append(buffer.baseAddress)
            step(index + 1)
        }
    }
    step(0)
}

/// One reader in an `SCardGetStatusChange` call.
struct PCSCReaderState: Sendable, Hashable {
    var reader: String
    var currentState: UInt32 = 0
    var eventState: UInt32 = 0
    var atr: [UInt8] = []

    static let changed: UInt32 = 0x0002
    static let unknown: UInt32 = 0x0004
    static let unavailable: UInt32 = 0x0008
    static let empty: UInt32 = 0x0010
    static let present: UInt32 = 0x0020
    static let mute: UInt32 = 0x0200

    var cardPresent: Bool { eventState & Self.present != 0 && eventState & Self.mute == 0 }
    var gone: Bool { eventState & (Self.unknown | Self.unavailable) != 0 }
}
