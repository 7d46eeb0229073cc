import Transport

/// The device side of the seam: what a transport server (vpcd card, CTAPHID over UDP, uhid)
/// hands each message to. ``VirtualKey`` is the implementation; servers know nothing of CTAP2.
public protocol CTAPMessageHandler: Sendable {
    /// Handles one CTAP2 message (command byte + CBOR parameters) and returns the reply
    /// (status byte + CBOR).
    ///
    /// `keepalive` is called while the authenticator works or waits for user presence, so the
    /// server can answer CTAPHID KEEPALIVE or NFC `9100`. The handler honours task
    /// cancellation (CTAPHID_CANCEL, NFC cancel): a cancelled request answers
    /// `CTAP2_ERR_KEEPALIVE_CANCEL`.
    func handleCBOR(
        _ message: [UInt8],
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async -> [UInt8]

    /// Handles one CTAP1/U2F request APDU and returns response data + status word.
    func handleU2F(_ apdu: [UInt8]) async -> [UInt8]

    /// Tells the authenticator it was powered off and on (card power cycle, uhid re-create):
    /// PIN-attempt counters that last until power cycle are reset and the reset window opens.
    func powerCycle() async

    /// Asks the authenticator to identify itself (CTAPHID_WINK).
    func wink() async
}
