/// A way a served key misbehaves on purpose, so that hosts' deadlines and error paths can be
/// tested against the real servers (`securitykey virtual serve --fault NAME`).
///
/// Each fault belongs to the transports whose handshake it names: ``silentAfterSelect`` to the
/// vpcd card, ``silentAfterInit`` to CTAPHID (UDP and uhid).
public struct VirtualKeyFault: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The fault's name, as `--fault` takes it.
    public var rawValue: String

    /// A fault by name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The card answers the power-up and SELECT of the FIDO applet, then never answers another
    /// APDU: the reader driver (and `SCardTransmit` above it) waits until the card leaves.
    public static let silentAfterSelect = VirtualKeyFault(rawValue: "silent-after-select")
    /// The key answers CTAPHID_INIT (a channel is allocated), then never answers anything else:
    /// no reply, no keepalive, no error.
    public static let silentAfterInit = VirtualKeyFault(rawValue: "silent-after-init")

    /// Every fault the servers implement.
    public static let all: [VirtualKeyFault] = [.silentAfterSelect, .silentAfterInit]

    /// Whether a server reached over `transport` can show this fault.
    public func applies(to transport: VirtualKeyTransport) -> Bool {
        switch (self, transport) {
        case (.silentAfterSelect, .pcsc): true
        case (.silentAfterInit, .udp), (.silentAfterInit, .uhid): true
        default: false
        }
    }

    public var description: String { rawValue }
}
