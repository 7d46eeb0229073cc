import ArgumentParser
import VirtualAuthenticator

/// `virtual serve --count N` and `--latency MS`: many keys from one process, each as slow as a
/// real key, for fleet tests and the fleet benchmark (``VirtualKeyServer`` serves them).
extension VirtualServeCommand {
    /// The most keys one process serves.
    static let maximumCount = VirtualKeyServer.maximumCount
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
}
