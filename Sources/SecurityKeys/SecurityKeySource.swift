import Authenticators
import HIDTransport
import NFCTransport
import Transport

/// Where a controller looks for security keys: a transport's discovery (listed, then watched
/// through its hotplug events until a key appears), a key the caller already opened with its
/// getInfo (an `Authenticator`), or a bare connection the caller opened (and
/// keeps owning).
public struct SecurityKeySource: Sendable {
    enum Kind: Sendable {
        case discovery(any DeviceDiscovery)
        case connection(any AuthenticatorConnection)
        case authenticator(Authenticator)
    }

    let kind: Kind

    /// Keys found by `discovery`; the controller opens and closes them.
    public static func discovery(_ discovery: any DeviceDiscovery) -> SecurityKeySource {
        SecurityKeySource(kind: .discovery(discovery))
    }

    /// A key the caller connected to; the controller asks its getInfo for each request and never
    /// closes it. Prefer ``authenticator(_:)`` when the caller has the key open already.
    public static func connection(_ connection: any AuthenticatorConnection) -> SecurityKeySource {
        SecurityKeySource(kind: .connection(connection))
    }

    /// A key the caller opened, used as it is: its getInfo is not asked again, and the
    /// controller never closes it (one open, one getInfo per ceremony).
    public static func authenticator(_ authenticator: Authenticator) -> SecurityKeySource {
        SecurityKeySource(kind: .authenticator(authenticator))
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

extension SecurityKeySource {
    /// Runs `body` with the sources of a request that either names its key or lets the user
    /// touch one: the key at `deviceURI` in `directory`, opened here once under `deadline` (the
    /// request's own, so opening, its one getInfo and the ceremony share one deadline), handed
    /// over as ``authenticator(_:)`` and closed once `body` returns; without a URI, every key
    /// the directory's discoveries find (the only one at once, the one touched among several,
    /// or the first to arrive).
    ///
    /// Throws only when the named key cannot be opened; `body` reports its own outcome.
    public static func withSources<T: Sendable>(
        in directory: AuthenticatorDirectory, deviceURI: String?, deadline: Deadline,
        _ body: ([SecurityKeySource]) async -> T
    ) async throws(AuthenticatorError) -> T {
        guard let deviceURI else { return await body(directory.discoveries.map(SecurityKeySource.discovery)) }
        let key = try await directory.open(uri: deviceURI, deadline: deadline)
        let result = await body([.authenticator(key)])
        await key.close()
        return result
    }
}
