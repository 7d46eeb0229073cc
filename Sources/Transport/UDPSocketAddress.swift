#if canImport(Glibc)
    import Glibc
#endif

/// An address of a ``UDPSocket``, which is dual-stack: IPv6 addresses as they are, IPv4
/// addresses as v4-mapped IPv6 addresses (`::ffff:a.b.c.d`, RFC 4291 §2.5.5.2).
public struct UDPSocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// The 16 address bytes.
    public var address: [UInt8]
    /// The UDP port.
    public var port: UInt16
    /// The IPv6 scope (interface) of link-local addresses; 0 otherwise.
    public var scope: UInt32

    /// The v4-mapped prefix `::ffff:0:0/96`.
    private static let mappedPrefix: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF]

    /// An address from its parts; `address` must be 16 bytes.
    public init(address: [UInt8], port: UInt16, scope: UInt32 = 0) {
        self.address = address
        self.port = port
        self.scope = scope
    }

    /// An IPv4 address, mapped.
    public init(ipv4 raw: sockaddr_in) {
        let bytes = withUnsafeBytes(of: raw.sin_addr.s_addr) { Array($0) }  // network order
        self.init(address: Self.mappedPrefix + bytes, port: UInt16(bigEndian: raw.sin_port))
    }

    /// An IPv6 address.
    public init(ipv6 raw: sockaddr_in6) {
        let bytes = withUnsafeBytes(of: raw.sin6_addr) { Array($0) }
        self.init(address: bytes, port: UInt16(bigEndian: raw.sin6_port), scope: raw.sin6_scope_id)
    }

    /// An IPv4 (`127.0.0.1`) or IPv6 (`::1`) literal (`inet_pton`); nil for anything else, host
    /// names included.
    public init?(numericHost host: String, port: UInt16) {
        var ipv4 = in_addr()
        var ipv6 = in6_addr()
        if inet_pton(AF_INET, host, &ipv4) == 1 {
            self.init(address: Self.mappedPrefix + withUnsafeBytes(of: ipv4.s_addr) { Array($0) }, port: port)
        } else if inet_pton(AF_INET6, host, &ipv6) == 1 {
            self.init(address: withUnsafeBytes(of: ipv6) { Array($0) }, port: port)
        } else {
            return nil
        }
    }

    /// Whether this is an IPv4 address in mapped form.
    public var isMappedIPv4: Bool { address.count == 16 && Array(address.prefix(12)) == Self.mappedPrefix }

    /// 127.0.0.0/8 or ::1.
    public var isLoopback: Bool {
        if isMappedIPv4 { return address[12] == 127 }
        return address == Array(repeating: 0, count: 15) + [1]
    }

    /// The C form for `bind`, `sendto` and `connect`.
    public var sockaddr: sockaddr_in6 {
        var raw = sockaddr_in6()
        raw.sin6_family = sa_family_t(AF_INET6)
        raw.sin6_port = port.bigEndian
        raw.sin6_scope_id = scope
        withUnsafeMutableBytes(of: &raw.sin6_addr) { bytes in
            for index in 0..<min(16, address.count) { bytes[index] = address[index] }
        }
        return raw
    }

    /// The same address with another port.
    public func with(port: UInt16) -> UDPSocketAddress {
        UDPSocketAddress(address: address, port: port, scope: scope)
    }

    /// `::` (any address, both families on a dual-stack socket).
    public static let any = UDPSocketAddress(address: Array(repeating: 0, count: 16), port: 0)
    /// `::1`.
    public static let ipv6Loopback = UDPSocketAddress(address: Array(repeating: 0, count: 15) + [1], port: 0)
    /// `::ffff:127.0.0.1`.
    public static let ipv4Loopback = UDPSocketAddress(address: mappedPrefix + [127, 0, 0, 1], port: 0)

    public var description: String {
        if isMappedIPv4 { return address.suffix(4).map(String.init).joined(separator: ".") + ":\(port)" }
        let groups = stride(from: 0, to: 16, by: 2).map {
            String(UInt16(address[$0]) << 8 | UInt16(address[$0 + 1]), radix: 16)
        }
        return "[\(groups.joined(separator: ":"))]:\(port)"
    }
}
