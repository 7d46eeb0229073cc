import CTAP2
import HIDTransport
import Logging
import NFCTransport
import Transport

/// Finds keys on every transport the tool knows and opens the one the user named.
struct DeviceDirectory: Sendable {
    let logger: Logger
    let timeout: Duration

    /// The discoveries, by URI scheme.
    var discoveries: [any DeviceDiscovery] {
        [HIDDiscovery(logger: logger), PCSCDiscovery(logger: logger), UDPDiscovery(logger: logger)]
    }

    /// A key found by ``keys()``: its descriptor and, when it answered, its getInfo.
    struct FoundKey: Sendable {
        var descriptor: DeviceDescriptor
        var info: AuthenticatorInfo?
        var problem: String?
    }

    /// Every key present now. A PC/SC reader is listed only when it holds a FIDO card.
    func keys() async -> [FoundKey] {
        var found: [FoundKey] = []
        for discovery in discoveries {
            let descriptors: [DeviceDescriptor]
            do { descriptors = try await discovery.devices() } catch {
                logger.info(
                    "discovery failed", metadata: ["scheme": "\(discovery.scheme)", "error": "\(error)"])
                continue
            }
            for descriptor in descriptors {
                let connection: any AuthenticatorConnection
                do { connection = try await discovery.open(uri: descriptor.uri) } catch {
                    // An empty reader, or a card without the FIDO applet: not a key.
                    logger.debug("not a key", metadata: ["uri": "\(descriptor.uri)", "error": "\(error)"])
                    continue
                }
                let session = CTAP2Session(connection: connection, defaultTimeout: timeout, logger: logger)
                var key = FoundKey(descriptor: connection.descriptor)
                do { key.info = try await session.getInfo() } catch {
                    key.problem = error.message
                }
                await connection.close()
                found.append(key)
            }
        }
        return found
    }

    /// Opens the key `uri` names, or the only key present when `uri` is nil.
    func open(_ uri: String?) async throws(CLIError) -> any AuthenticatorConnection {
        if let uri {
            guard let colon = uri.firstIndex(of: ":") else {
                throw CLIError.usage("\"\(uri)\" is not a device URI (hid:..., pcsc:..., udp:HOST:PORT).")
            }
            let scheme = String(uri[..<colon])
            guard let discovery = discoveries.first(where: { $0.scheme == scheme }) else {
                throw CLIError(
                    .notSupported, code: "not-supported",
                    "Devices of the \(scheme): kind are not supported by this build.")
            }
            do { return try await discovery.open(uri: uri) } catch { throw CLIError(error) }
        }
        var opened: [any AuthenticatorConnection] = []
        for discovery in discoveries {
            guard let descriptors = try? await discovery.devices() else { continue }
            for descriptor in descriptors {
                if let connection = try? await discovery.open(uri: descriptor.uri) {
                    opened.append(connection)
                }
            }
        }
        guard let first = opened.first else {
            throw CLIError(
                .noDevice, code: "no-device",
                "No security key found; plug one in, or name one with --device (see `securitykey list`).")
        }
        guard opened.count == 1 else {
            let uris = opened.map(\.descriptor.uri)
            for connection in opened { await connection.close() }
            throw CLIError.usage(
                "\(uris.count) security keys are present; choose one with --device: \(uris.joined(separator: ", "))."
            )
        }
        return first
    }
}
