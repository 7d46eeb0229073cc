import _SecurityKeyInternals
import ArgumentParser
import CBOR
import CTAP2
import Foundation
import Logging
import Transport
import VirtualAuthenticator

/// `virtual serve --count N` and `--latency MS`: many keys from one process, each as slow as a
/// real key, for fleet tests and the fleet benchmark.
extension VirtualServeCommand {
    /// The most keys one process serves (one socket each, all on one I/O thread).
    static let maximumCount = 256
    /// The longest --latency: a minute, past which hosts give up anyway.
    static let maximumLatency = 60_000

    /// Checks --count and --latency against each other and the other options.
    func validateMany() throws {
        if let latency, latency < 0 || latency > Self.maximumLatency {
            throw ValidationError("--latency takes 0 to \(Self.maximumLatency) ms.")
        }
        guard count >= 1, count <= Self.maximumCount else {
            throw ValidationError("--count takes 1 to \(Self.maximumCount).")
        }
        guard count > 1 else { return }
        guard udp else { throw ValidationError("--count goes with --udp.") }
        // Each key has its own identity; options naming one key's would be ambiguous.
        if state != nil || aaguid != nil || attestationRoot != nil {
            throw ValidationError("--state, --aaguid and --attestation-root name one key; not with --count.")
        }
        if let parsed = try? Self.parseManyAddress(address), parsed.port != 0,
            Int(parsed.port) + count - 1 > Int(UInt16.max)
        {
            throw ValidationError("--count \(count) from port \(parsed.port) runs past port 65535.")
        }
    }

    /// Where --count keys listen: HOST:PORT as for one key, or HOST:0 for any free port each.
    static func parseManyAddress(_ text: String?) throws(CLIError) -> (host: String, port: UInt16) {
        guard let text else { return ("127.0.0.1", 8111) }
        if text.hasSuffix(":0"), text.count > 2 { return (String(text.dropLast(2)), 0) }
        return try parseAddress(text)
    }

    /// `key`, slowed by --latency when given.
    func withLatency(_ key: any CTAPMessageHandler) -> any CTAPMessageHandler {
        guard let latency, latency > 0 else { return key }
        return LatencyHandler(key, latency: .milliseconds(latency))
    }

    /// Serves --count keys over UDP from this process until SIGINT or SIGTERM; SIGUSR1 re-plugs
    /// them all.
    func serveMany(_ settings: VirtualKeySettings, logger: Logger) async throws {
        let configuration = settings.configuration
        let target = try Self.parseManyAddress(address)
        let presence = try parsePresence()
        var keys: [VirtualKey] = []
        var servers: [UDPCTAPHIDServer] = []
        for index in 0..<count {
            // A new key each time: its own AAGUID, attestation identity and credentials.
            let key = try VirtualKey(
                configuration: configuration, stateFile: nil, userPresence: presence, logger: logger)
            let port = target.port == 0 ? 0 : target.port + UInt16(index)
            do {
                servers.append(
                    try UDPCTAPHIDServer(
                        handler: withLatency(key),
                        configuration: .init(
                            host: target.host, port: port,
                            capabilities: settings.ctaphidCapabilities),
                        logger: logger))
            } catch {
                throw CLIError(error)
            }
            keys.append(key)
        }
        let pid = Int64(ProcessInfo.processInfo.processIdentifier)
        for (key, server) in zip(keys, servers) {
            let aaguidText = AAGUID(bytes: key.aaguid)?.description ?? Hex.encode(key.aaguid)
            if json {
                Console.out(
                    JSONValue.members([
                        ("transport", .string("udp")), ("uri", .string("udp:\(target.host):\(server.port)")),
                        ("aaguid", .string(aaguidText)), ("state", .null), ("pid", .integer(pid)),
                    ]).text())
            }
        }
        let ports = servers.map(\.port)
        Console.err(
            "securitykey: \(count) virtual keys served over CTAPHID/UDP at udp:\(target.host):"
                + "\(ports.min() ?? 0)...\(ports.max() ?? 0)"
                + (latency.map { ", each answering after \($0) ms" } ?? "")
                + "; SIGINT or SIGTERM stops them.")
        let failure = ServeFailure()
        // One I/O thread waits on every key's socket; one failing ends them all.
        let body: @Sendable () async -> Void = { [servers] in
            do throws(TransportError) { try await UDPCTAPHIDServer.serve(servers) } catch {
                failure.set(CLIError(error))
            }
        }
        let replug: @Sendable () async -> Void = { [servers, keys] in
            for server in servers { server.unplug(for: Self.unpluggedTime) }
            try? await Task.sleep(for: Self.unpluggedTime)
            for key in keys { await key.powerCycle() }
        }
        let signal = await Self.serveUntilSignal(body, powerCycle: replug)
        if let error = failure.error { throw error }
        Console.err("securitykey: \(signal) received; the \(count) virtual keys stopped.")
    }
}
