import Transport

/// A CTAPHID-over-UDP device address as written in a URI: `udp:127.0.0.1:8111?local=7112`.
///
/// Firmware emulators listen on 127.0.0.1:8111 and send their reports to 127.0.0.1:7112, so the
/// host binds local port 7112 unless the URI says otherwise (`local=0` picks a free port; the
/// virtual authenticator answers to whichever port the host sent from).
public struct UDPEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The device's IPv4 address, dotted quad.
    public var host: String
    /// The device's UDP port.
    public var port: UInt16
    /// The local port the host binds (0 = any free port).
    public var localPort: UInt16

    /// The device port of firmware emulators.
    public static let defaultDevicePort: UInt16 = 8111
    /// The host port firmware emulators send to.
    public static let defaultLocalPort: UInt16 = 7112

    /// Creates an endpoint.
    public init(
        host: String = "127.0.0.1", port: UInt16 = defaultDevicePort, localPort: UInt16 = defaultLocalPort
    ) {
        self.host = host
        self.port = port
        self.localPort = localPort
    }

    /// Parses `udp:HOST:PORT[?local=PORT]`.
    public init(uri: String) throws(TransportError) {
        let invalid = TransportError(
            .invalidURI,
            "'\(uri)' is not a UDP device URI like udp:127.0.0.1:8111 or udp:127.0.0.1:8111?local=7112.")
        guard uri.hasPrefix("udp:") else { throw invalid }
        var rest = Substring(uri.dropFirst(4))
        var localPort = Self.defaultLocalPort
        if let question = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: question)...]
            rest = rest[..<question]
            for item in query.split(separator: "&") {
                let pair = item.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0] == "local", let value = UInt16(pair[1]) else { throw invalid }
                localPort = value
            }
        }
        guard let colon = rest.lastIndex(of: ":"), let port = UInt16(rest[rest.index(after: colon)...]),
            port != 0
        else { throw invalid }
        let host = String(rest[..<colon])
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) else { throw invalid }
        self.init(host: host, port: port, localPort: localPort)
    }

    /// The URI form; `?local=` is written only when it differs from the default.
    public var uri: String {
        localPort == Self.defaultLocalPort ? "udp:\(host):\(port)" : "udp:\(host):\(port)?local=\(localPort)"
    }

    public var description: String { uri }
}
