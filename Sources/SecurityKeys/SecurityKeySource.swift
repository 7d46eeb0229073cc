import HIDTransport
import NFCTransport
import Transport

/// Where a controller looks for security keys: a transport's discovery (listed, then watched
/// through its hotplug events until a key appears) or a connection the caller already opened
/// (and keeps owning).
public struct SecurityKeySource: Sendable {
    enum Kind: Sendable {
        case discovery(any DeviceDiscovery)
        case connection(any AuthenticatorConnection)
    }

    let kind: Kind

    /// Keys found by `discovery`; the controller opens and closes them.
    public static func discovery(_ discovery: any DeviceDiscovery) -> SecurityKeySource {
        SecurityKeySource(kind: .discovery(discovery))
    }

    /// A key the caller connected to; the controller never closes it.
    public static func connection(_ connection: any AuthenticatorConnection) -> SecurityKeySource {
        SecurityKeySource(kind: .connection(connection))
    }

    /// NFC and contact cards through pcscd.
    public static let pcsc = SecurityKeySource.discovery(PCSCDiscovery())

    /// USB keys through hidapi (hidraw).
    public static let hid = SecurityKeySource.discovery(HIDDiscovery())

    /// CTAPHID-over-UDP keys (emulators, the virtual key) at `endpoints`.
    public static func udp(_ endpoints: [UDPEndpoint] = [UDPEndpoint()]) -> SecurityKeySource {
        .discovery(UDPDiscovery(endpoints: endpoints))
    }

    /// The keys a desktop has: USB and PC/SC.
    public static let system: [SecurityKeySource] = [.hid, .pcsc]
}
