#if canImport(Glibc)
    import Glibc
#endif
import Transport

/// A CTAPHID-over-UDP device address as written in a URI: `udp:127.0.0.1:8111`,
/// `udp:localhost:8111`, `udp:[::1]:8111?local=7112`.
///
/// Firmware emulators listen on port 8111 and send their reports to port 7112, whatever port the
/// host sent from. So by default the host binds local port 7112 when it is free and any free
/// port otherwise: the first host process talks to emulators, and every host process talks to
/// keys that answer the sender (the virtual authenticator). `?local=PORT` forces a port
/// (`local=0`: any free port).
public struct UDPEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The device's host: a DNS name, an IPv4 dotted quad, or an IPv6 address (without brackets).
    public var host: String
    /// The device's UDP port.
    public var port: UInt16
    /// The local port the host binds: nil for ``defaultLocalPort`` when free, else any free
    /// port; 0 for any free port; another value forces that port.
    public var localPort: UInt16?

    /// The device port of firmware emulators.
    public static let defaultDevicePort: UInt16 = 8111
    /// The host port firmware emulators send to.
    public static let defaultLocalPort: UInt16 = 7112
    /// The most endpoints ``list(parsing:)`` accepts (each one is probed).
    public static let maxListCount = 64
    /// The longest host name accepted (RFC 1035 §2.3.4).
    static let maxHostLength = 253

    /// Creates an endpoint.
    public init(host: String = "127.0.0.1", port: UInt16 = defaultDevicePort, localPort: UInt16? = nil) {
        self.host = host
        self.port = port
        self.localPort = localPort
    }

    /// Parses `udp:HOST:PORT[?local=PORT]`, where HOST is a DNS name, an IPv4 dotted quad or an
    /// IPv6 address in brackets.
    public init(uri: String) throws(TransportError) {
        let invalid = TransportError(
            .invalidURI,
            "'\(uri)' is not a UDP device URI like udp:127.0.0.1:8111, udp:localhost:8111 or udp:[::1]:8111?local=7112."
        )
        guard uri.hasPrefix("udp:") else { throw invalid }
        var rest = Substring(uri.dropFirst(4))
        var localPort: UInt16?
        if let question = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: question)...]
            rest = rest[..<question]
            let items = query.split(separator: "&", omittingEmptySubsequences: false)
            guard items.count == 1 else { throw invalid }
            let pair = items[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, pair[0] == "local", pair[1].allSatisfy({ $0.isASCII && $0.isNumber }),
                let value = UInt16(pair[1])
            else { throw invalid }
            localPort = value
        }
        guard let (host, port) = Self.hostAndPort(rest) else { throw invalid }
        self.init(host: host, port: port, localPort: localPort)
    }

    /// Parses a comma-separated list of endpoints, each `HOST:PORT`, `HOST:P1-P2` (every port of
    /// the range) or a full `udp:HOST:PORT[?local=PORT]` URI (the form of `SECURITYKEY_UDP` and `--udp`). Spaces
    /// around items are ignored; an empty or blank text is an empty list.
    public static func list(parsing text: String) throws(TransportError) -> [UDPEndpoint] {
        let trimmed = text.trimmingSpaces
        if trimmed.isEmpty { return [] }
        let items = trimmed.split(separator: ",", omittingEmptySubsequences: false)
        guard items.count <= maxListCount else {
            throw TransportError(
                .invalidURI, "The UDP endpoint list names more than \(maxListCount) endpoints.")
        }
        var endpoints: [UDPEndpoint] = []
        for raw in items {
            let item = Substring(raw).trimmingSpaces
            guard !item.isEmpty else {
                throw TransportError(.invalidURI, "The UDP endpoint list '\(text)' has an empty item.")
            }
            for uri in try portRange(item) {
                let endpoint: UDPEndpoint
                do throws(TransportError) {
                    endpoint = try UDPEndpoint(uri: uri)
                } catch {
                    throw TransportError(
                        .invalidURI,
                        "'\(item)' is not a UDP endpoint like 127.0.0.1:8111, localhost:8111, [::1]:8111 or 127.0.0.1:8111-8114."
                    )
                }
                if !endpoints.contains(endpoint) { endpoints.append(endpoint) }
                guard endpoints.count <= maxListCount else {
                    throw TransportError(
                        .invalidURI, "The UDP endpoint list names more than \(maxListCount) endpoints.")
                }
            }
        }
        return endpoints
    }

    /// The URIs one list item names: itself, or with a port range `HOST:P1-P2` (P1 <= P2) one
    /// URI per port, in order.
    private static func portRange(_ item: Substring) throws(TransportError) -> [String] {
        let uri = item.hasPrefix("udp:") ? String(item) : "udp:\(item)"
        guard let colon = uri.lastIndex(of: ":"), !uri[colon...].contains("?"),
            let dash = uri[colon...].firstIndex(of: "-")
        else { return [uri] }
        let first = uri[uri.index(after: colon)..<dash]
        let last = uri[uri.index(after: dash)...]
        func port(_ text: Substring) -> UInt16? {
            guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return UInt16(text)
        }
        guard let low = port(first), let high = port(last), low > 0, low <= high else {
            throw TransportError(
                .invalidURI, "'\(item)' does not name a port range like 127.0.0.1:8111-8114 (first port, then a higher one).")
        }
        guard Int(high) - Int(low) < maxListCount else {
            throw TransportError(
                .invalidURI, "The port range in '\(item)' names more than \(maxListCount) endpoints.")
        }
        let host = uri[..<colon]
        return (low...high).map { "\(host):\($0)" }
    }

    /// Splits `HOST:PORT` (IPv6 in brackets) and checks both; nil when malformed.
    private static func hostAndPort(_ text: Substring) -> (String, UInt16)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        let portText = text[text.index(after: colon)...]
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = UInt16(portText), port != 0
        else { return nil }
        let hostText = text[..<colon]
        if hostText.hasPrefix("[") {
            guard hostText.hasSuffix("]"), hostText.count > 2 else { return nil }
            let inner = String(hostText.dropFirst().dropLast())
            guard isIPv6Literal(inner) else { return nil }
            return (inner, port)
        }
        let host = String(hostText)
        guard isIPv4Literal(host) || isHostName(host) else { return nil }
        return (host, port)
    }

    /// An IPv6 address `inet_pton` accepts (no zone index).
    static func isIPv6Literal(_ text: String) -> Bool {
        guard text.utf8.count <= 45, text.contains(":") else { return false }
        var address = in6_addr()
        return inet_pton(AF_INET6, text, &address) == 1
    }

    /// A dotted quad of four decimal octets.
    static func isIPv4Literal(_ text: String) -> Bool {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4
            && octets.allSatisfy {
                !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && UInt8($0) != nil
            }
    }

    /// A DNS host name (RFC 1123 §2.1): dot-separated labels of letters, digits and inner
    /// hyphens, 1 to 63 characters each; a name of digits and dots only must be a dotted quad.
    static func isHostName(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= maxHostLength else { return false }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        let wellFormed = labels.allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                && label.unicodeScalars.allSatisfy {
                    ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9")
                        || $0 == "-"
                }
        }
        // "1.2.3" or "256.0.0.1" would reach getaddrinfo as inet_aton shorthand; refuse them.
        let numeric = text.unicodeScalars.allSatisfy { ($0 >= "0" && $0 <= "9") || $0 == "." }
        return wellFormed && !numeric
    }

    /// The host as a URI writes it: IPv6 addresses in brackets.
    public var uriHost: String { host.contains(":") ? "[\(host)]" : host }

    /// The URI form; `?local=` is written only when a local port is forced.
    public var uri: String {
        let base = "udp:\(uriHost):\(port)"
        guard let localPort else { return base }
        return "\(base)?local=\(localPort)"
    }

    /// The endpoint as a device: what `UDPDiscovery` reports for it once it answers, and what a
    /// caller lists for an endpoint it will open whether or not it answers a probe.
    public var descriptor: DeviceDescriptor {
        DeviceDescriptor(uri: uri, transport: .udp, product: "CTAPHID over UDP")
    }

    public var description: String { uri }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        let scalars = Substring(self)
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
            let last = scalars.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return scalars[first...last]
    }
}
