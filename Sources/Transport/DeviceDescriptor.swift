import Synchronization

/// How a device is reached.
public struct TransportKind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// USB HID through hidapi's hidraw backend.
    public static let usb = TransportKind(rawValue: "usb")
    /// NFC or CCID through PC/SC.
    public static let nfc = TransportKind(rawValue: "nfc")
    /// CTAPHID reports over UDP (firmware emulators, the virtual authenticator).
    public static let udp = TransportKind(rawValue: "udp")
    /// An in-process authenticator.
    public static let inProcess = TransportKind(rawValue: "in-process")

    public var description: String { rawValue }
}

/// A device found by discovery: what `list` shows and what `--device` takes.
public struct DeviceDescriptor: Hashable, Sendable, Codable {
    /// The device URI: `hid:/dev/hidraw3`, `pcsc:Reader Name`, `udp:127.0.0.1:8111`.
    public var uri: String
    /// How it is reached.
    public var transport: TransportKind
    /// USB vendor ID, where known.
    public var vendorID: UInt16?
    /// USB product ID, where known.
    public var productID: UInt16?
    /// Manufacturer string, where known.
    public var manufacturer: String?
    /// Product name (for PC/SC, the reader name).
    public var product: String?
    /// Serial number string, where known.
    public var serialNumber: String?

    /// Creates a descriptor.
    public init(
        uri: String, transport: TransportKind, vendorID: UInt16? = nil, productID: UInt16? = nil,
        manufacturer: String? = nil, product: String? = nil, serialNumber: String? = nil
    ) {
        self.uri = uri
        self.transport = transport
        self.vendorID = vendorID
        self.productID = productID
        self.manufacturer = manufacturer
        self.product = product
        self.serialNumber = serialNumber
    }
}

/// Finds devices of one transport and opens them.
public protocol DeviceDiscovery: Sendable {
    /// The URI scheme this discovery answers for (`hid`, `pcsc`, `udp`).
    var scheme: String { get }
    /// Lists the devices present now.
    func devices() async throws(TransportError) -> [DeviceDescriptor]
    /// Opens a device found by ``devices()`` or named by URI.
    func open(uri: String) async throws(TransportError) -> any AuthenticatorConnection
    /// Opens a device as ``open(uri:)`` does, every step (lookup, channel allocation, waiting
    /// while another application holds it: a PC/SC transaction, a locked hidraw node) ending by
    /// `deadline` at the latest.
    func open(uri: String, deadline: Deadline) async throws(TransportError) -> any AuthenticatorConnection
    /// The devices present when iteration starts, as ``DeviceEvent/arrived(_:)``, then each
    /// arrival and removal as the system reports it, until the consumer stops iterating.
    /// Implementations wait on the system's events (udev, PC/SC reader states), never poll.
    func events() -> AsyncStream<DeviceEvent>
}

/// A change in the set of devices a discovery sees.
public enum DeviceEvent: Hashable, Sendable {
    /// A device is present: listed when the event stream starts, or plugged in, or (PC/SC) a
    /// card put on the reader.
    case arrived(DeviceDescriptor)
    /// The device with this URI went away (unplugged, card removed, reader gone).
    case removed(uri: String)
}

extension DeviceDiscovery {
    /// The default for discoveries whose devices are never held by another application:
    /// ``open(uri:)``.
    public func open(uri: String, deadline: Deadline) async throws(TransportError) -> any AuthenticatorConnection {
        try await open(uri: uri)
    }

    /// The default for discoveries without an event source: the devices present when the
    /// sequence is first iterated, as ``DeviceEvent/arrived(_:)``, and then the end of the
    /// sequence (no changes are ever reported).
    public func events() -> AsyncStream<DeviceEvent> {
        let discovery = self
        let pending = Mutex<[DeviceEvent]?>(nil)
        return AsyncStream(unfolding: {
            if pending.withLock({ $0 == nil }) {
                let listed = (try? await discovery.devices()) ?? []
                pending.withLock { $0 = listed.map(DeviceEvent.arrived) }
            }
            return pending.withLock { queue -> DeviceEvent? in
                guard var events = queue, !events.isEmpty else { return nil }
                let next = events.removeFirst()
                queue = events
                return next
            }
        })
    }
}
