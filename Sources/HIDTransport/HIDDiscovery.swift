import CTAPHID
import Logging
import Transport

/// Finds FIDO security keys on USB HID through hidapi's hidraw backend and opens them.
///
/// Only interfaces on usage page 0xF1D0 with usage 0x01 are listed (CTAP 2.1 §11.2.8.1); device
/// URIs are `hid:/dev/hidrawN`. Enumeration runs on a dedicated thread.
public struct HIDDiscovery: DeviceDiscovery {
    /// `hid`.
    public let scheme = "hid"
    /// How long ``open(uri:)`` waits for another process's lock and the INIT answer.
    public var openTimeout: Duration
    let logger: Logger

    /// The thread hid_enumerate runs on.
    private static let enumerationThread = BlockingIOThread(name: "hid enumerate")

    /// Creates a discovery.
    public init(openTimeout: Duration = .seconds(3), logger: Logger = Logger(label: "securitykey.hid")) {
        self.openTimeout = openTimeout
        self.logger = logger
    }

    /// The FIDO interfaces present now (empty when there are none).
    public func devices() async throws(TransportError) -> [DeviceDescriptor] {
        let all = try await Self.enumerationThread.run(skipIfCancelled: true) { () throws(TransportError) in
            try HIDAPI.enumerate()
        }
        return all.filter {
            $0.usagePage == HIDReportDescriptor.fidoUsagePage && $0.usage == HIDReportDescriptor.ctaphidUsage
        }
        .map {
            DeviceDescriptor(
                uri: "hid:\($0.path)", transport: .usb, vendorID: $0.vendorID, productID: $0.productID,
                manufacturer: $0.manufacturer, product: $0.product, serialNumber: $0.serialNumber)
        }
    }

    /// Opens `hid:/dev/hidrawN`, waiting at most ``openTimeout`` for another process to let
    /// go of it.
    public func open(uri: String) async throws(TransportError) -> any AuthenticatorConnection {
        try await open(uri: uri, deadline: .after(openTimeout))
    }

    /// Opens `hid:/dev/hidrawN`, waiting until `deadline` (the operation's) for another process
    /// to let go of it (its `flock`) and saying so while it waits; channel allocation
    /// (CTAPHID_INIT) ends by the open timeout or `deadline`, whichever comes first.
    public func open(uri: String, deadline commandDeadline: Deadline) async throws(TransportError)
        -> any AuthenticatorConnection
    {
        guard uri.hasPrefix("hid:"), uri.count > 4 else {
            throw TransportError(.invalidURI, "'\(uri)' is not a HID device URI like hid:/dev/hidraw0.")
        }
        let path = String(uri.dropFirst(4))
        let pipe = try await HIDReportPipe.open(path: path, deadline: commandDeadline, logger: logger)
        let known = try? await devices().first { $0.uri == uri }
        let descriptor = known ?? DeviceDescriptor(uri: uri, transport: .usb)
        let deadline = commandDeadline.capped(at: openTimeout)
        return try await CTAPHIDConnection.open(
            pipe: pipe, descriptor: descriptor, timeout: min(max(deadline.remaining, .milliseconds(500)), commandDeadline.remaining),
            logger: logger)
    }
}
