import CTAP2
import HIDTransport
import Logging
import NFCTransport
import Transport

/// Every place security keys are found — USB HID, PC/SC readers, configured CTAPHID-over-UDP
/// endpoints — listed, opened by URI, and watched for arrivals and removals.
public struct AuthenticatorDirectory: Sendable {
    /// The discoveries listed and watched, in order.
    public let discoveries: [any DeviceDiscovery]
    /// Discoveries that only open URIs (never listed), by scheme: UDP opens any `udp:` URI
    /// even when no endpoint is configured for listing.
    public let openers: [any DeviceDiscovery]
    let logger: Logger

    /// The environment variable naming UDP endpoints to list, comma-separated
    /// (`127.0.0.1:8111,udp:[::1]:8112`).
    public static let udpEnvironmentVariable = "SECURITYKEY_UDP"

    /// A directory over `discoveries`, opening URIs with them and with `openers`.
    public init(
        discoveries: [any DeviceDiscovery], openers: [any DeviceDiscovery] = [],
        logger: Logger = Logger(label: "securitykey.directory")
    ) {
        self.discoveries = discoveries
        self.openers = openers
        self.logger = logger
    }

    /// The keys of this machine: USB HID and PC/SC, plus the UDP `endpoints` given (a UDP
    /// endpoint is listed only when configured; there is no way to enumerate UDP).
    public static func system(
        udpEndpoints: [UDPEndpoint] = [], logger: Logger = Logger(label: "securitykey.directory")
    ) -> AuthenticatorDirectory {
        var discoveries: [any DeviceDiscovery] = [HIDDiscovery(logger: logger), PCSCDiscovery(logger: logger)]
        if !udpEndpoints.isEmpty { discoveries.append(UDPDiscovery(endpoints: udpEndpoints, logger: logger)) }
        return AuthenticatorDirectory(
            discoveries: discoveries, openers: [UDPDiscovery(endpoints: [], logger: logger)], logger: logger)
    }

    /// The UDP endpoints configured by `options` (each `HOST:PORT` or `udp:HOST:PORT`, possibly
    /// comma-separated) followed by those of ``udpEnvironmentVariable`` in `environment`.
    ///
    /// A `udp:` URI in `device` (the key a command names) is listed and watched too, as a
    /// configured endpoint is (a reset then sees it go and come back); any other `device` adds
    /// nothing.
    public static func udpEndpoints(options: [String], environment: [String: String], device: String? = nil)
        throws(AuthenticatorError) -> [UDPEndpoint]
    {
        var endpoints: [UDPEndpoint] = []
        var texts = options
        if let value = environment[udpEnvironmentVariable], !value.isEmpty { texts.append(value) }
        for text in texts {
            do { endpoints += try UDPEndpoint.list(parsing: text) } catch {
                throw AuthenticatorError(error)
            }
        }
        if let device, device.hasPrefix("udp:"), let named = try? UDPEndpoint(uri: device) { endpoints.append(named) }
        var seen = Set<String>()
        return endpoints.filter { seen.insert($0.uri).inserted }
    }

    // MARK: Listing and opening

    /// A device found by ``list(deadline:)``: its descriptor and, when it answered, its getInfo.
    public struct Listing: Sendable {
        /// How the device is reached.
        public var descriptor: DeviceDescriptor
        /// Its getInfo, when it answered.
        public var info: AuthenticatorInfo?
        /// Why it did not answer getInfo, when it did not.
        public var problem: AuthenticatorError?

        /// Creates a listing.
        public init(descriptor: DeviceDescriptor, info: AuthenticatorInfo? = nil, problem: AuthenticatorError? = nil) {
            self.descriptor = descriptor
            self.info = info
            self.problem = problem
        }
    }

    /// The listing of the key at `uri` alone: opened, its getInfo read, closed. Fails as
    /// ``open(uri:deadline:)`` does when the key is not there.
    public func list(uri: String, deadline: Deadline) async throws(AuthenticatorError) -> Listing {
        let key = try await open(uri: uri, deadline: deadline)
        let listing = Listing(descriptor: key.descriptor, info: await key.info)
        await key.close()
        return listing
    }

    /// Every key present now, each asked for getInfo, in discovery order. A PC/SC reader is
    /// listed only when it holds a card with the FIDO applet. Keys are asked all at once, so a
    /// fleet of keys costs about as long as the slowest one.
    public func list(deadline: Deadline) async -> [Listing] {
        let found = await forEachDevice { discovery, descriptor async -> Listing? in
            let connection: any AuthenticatorConnection
            do { connection = try await discovery.open(uri: descriptor.uri, deadline: deadline) } catch {
                // An empty reader, or a card without the FIDO applet: not a key.
                logger.debug("not a key", metadata: ["uri": "\(descriptor.uri)", "error": "\(error)"])
                return nil
            }
            do throws(AuthenticatorError) {
                let authenticator = try await Authenticator.open(connection, deadline: deadline, logger: logger)
                let listing = Listing(descriptor: connection.descriptor, info: await authenticator.info)
                await authenticator.close()
                return listing
            } catch {
                return Listing(descriptor: connection.descriptor, problem: error)
            }
        }
        return found.results.compactMap { $0 }
    }

    /// Lists every discovery's devices and runs `body` on each device, all concurrently;
    /// results come back in discovery order, then device order. A discovery that fails with
    /// a permission error is reported as `denied`.
    func forEachDevice<T: Sendable>(
        _ body: @escaping @Sendable (any DeviceDiscovery, DeviceDescriptor) async -> T
    ) async -> (results: [T], denied: AuthenticatorError?) {
        let logger = self.logger
        let discoveries = self.discoveries
        let listed = await withTaskGroup(
            of: (Int, [DeviceDescriptor], TransportError?).self, returning: [(Int, [DeviceDescriptor], TransportError?)].self
        ) { group in
            for (index, discovery) in discoveries.enumerated() {
                group.addTask {
                    do throws(TransportError) { return (index, try await discovery.devices(), nil) } catch {
                        logger.debug(
                            "discovery failed", metadata: ["scheme": "\(discovery.scheme)", "code": "\(error.code)"])
                        return (index, [], error)
                    }
                }
            }
            var all: [(Int, [DeviceDescriptor], TransportError?)] = []
            for await entry in group { all.append(entry) }
            return all
        }
        let failures: [TransportError] = listed.compactMap { $0.2 }
        let denied = failures.first { $0.code == .permissionDenied }.map { AuthenticatorError($0) }
        let work = listed.sorted { $0.0 < $1.0 }.flatMap { entry in entry.1.map { (entry.0, $0) } }
        let results = await withTaskGroup(of: (Int, T).self, returning: [T].self) { group in
            for (position, item) in work.enumerated() {
                group.addTask { (position, await body(discoveries[item.0], item.1)) }
            }
            var collected: [(Int, T)] = []
            for await entry in group { collected.append(entry) }
            return collected.sorted { $0.0 < $1.0 }.map(\.1)
        }
        return (results, denied)
    }

    /// The discovery that opens `uri`, by its scheme.
    func discovery(for uri: String) throws(AuthenticatorError) -> any DeviceDiscovery {
        let known = discoveries + openers
        // The schemes this directory opens, in its order, for messages that list them.
        var schemes: [String] = []
        for discovery in known where !schemes.contains(discovery.scheme) { schemes.append(discovery.scheme) }
        let forms = schemes.map { "\($0):" }.joined(separator: ", ")
        guard let colon = uri.firstIndex(of: ":") else {
            throw AuthenticatorError(
                .invalidURI, "\"\(uri)\" is not a device URI; device URIs start with one of \(forms).")
        }
        let scheme = String(uri[..<colon])
        guard let discovery = known.first(where: { $0.scheme == scheme }) else {
            throw AuthenticatorError(
                .invalidURI,
                "Unknown device scheme \"\(scheme):\"; device URIs start with one of \(forms).")
        }
        return discovery
    }

    /// Opens the key at `uri` and reads its getInfo.
    public func open(uri: String, deadline: Deadline) async throws(AuthenticatorError) -> Authenticator {
        let connection = try await connect(uri: uri, deadline: deadline)
        return try await Authenticator.open(connection, deadline: deadline, logger: logger)
    }

    /// Opens a connection to the device at `uri` without a CTAP2 session (no getInfo), for a
    /// caller that keeps what it learnt of the key elsewhere; waits at most until `deadline`
    /// for another program to let go of the device.
    public func connect(uri: String, deadline: Deadline) async throws(AuthenticatorError)
        -> any AuthenticatorConnection
    {
        let discovery = try discovery(for: uri)
        do { return try await discovery.open(uri: uri, deadline: deadline) } catch {
            throw AuthenticatorError(error, deviceURI: uri)
        }
    }

    // MARK: Hotplug

    /// Runs `body` with every discovery's events — the devices present when the watch starts,
    /// then each arrival and removal — until the calling task is cancelled. One child task per
    /// discovery (structured); events of one discovery reach `body` in order.
    public func forEachEvent(_ body: @escaping @Sendable (DeviceEvent) async -> Void) async {
        await withDiscardingTaskGroup { group in
            for discovery in discoveries {
                group.addTask {
                    for await event in discovery.events() {
                        if Task.isCancelled { break }
                        await body(event)
                    }
                }
            }
        }
    }

    /// Opens each of `uris` and reads its getInfo, all at once; results in the order given.
    /// For fleets whose addresses are known (a rack of UDP emulators, a list of readers).
    public func open(uris: [String], deadline: Deadline) async -> [Result<Authenticator, AuthenticatorError>] {
        await withTaskGroup(of: (Int, Result<Authenticator, AuthenticatorError>).self) { group in
            for (index, uri) in uris.enumerated() {
                group.addTask {
                    do throws(AuthenticatorError) {
                        return (index, .success(try await open(uri: uri, deadline: deadline)))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results: [(Int, Result<Authenticator, AuthenticatorError>)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }

    /// Opens every key present now, all at once, in discovery order. Devices that cannot be
    /// opened are skipped; a permission failure is returned so that a caller finding no key can
    /// say why.
    public func openAll(deadline: Deadline) async -> (authenticators: [Authenticator], denied: AuthenticatorError?) {
        let outcome = await forEachDevice { _, descriptor async -> Result<Authenticator, AuthenticatorError> in
            do throws(AuthenticatorError) {
                return .success(try await open(uri: descriptor.uri, deadline: deadline))
            } catch {
                logger.debug("not a usable key", metadata: ["uri": "\(descriptor.uri)", "code": "\(error.code)"])
                return .failure(error)
            }
        }
        var opened: [Authenticator] = []
        var denied = outcome.denied
        for result in outcome.results {
            switch result {
            case .success(let authenticator): opened.append(authenticator)
            case .failure(let error): if error.code == .permissionDenied { denied = error }
            }
        }
        return (opened, denied)
    }
}
