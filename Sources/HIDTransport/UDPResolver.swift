#if canImport(Glibc)
    import Glibc
#endif
import _SecurityKeyInternals
import Transport

/// Host-name resolution for UDP endpoints: `getaddrinfo`, bounded by a deadline.
enum UDPResolver {
    /// The most addresses kept from one resolution (each is sent the first reports).
    static let maxAddresses = 4
    /// glibc's `EAI_NODATA` and `EAI_ADDRFAMILY` (netdb.h), which Swift's Glibc module hides
    /// behind `_GNU_SOURCE`: the name exists but has no address.
    private static let glibcNoData: Int32 = -5
    private static let glibcAddressFamily: Int32 = -9
    /// The most `addrinfo` entries walked.
    private static let maxEntries = 64

    /// The addresses of `host` (an IPv4 or IPv6 literal, or a DNS name) at `port`, at most
    /// ``maxAddresses``, IPv6 and IPv4 alike. Literals resolve at once; a name is looked up on a
    /// helper thread and abandoned with a timeout error when `deadline` passes first, since
    /// `getaddrinfo` itself cannot be bounded.
    static func resolve(host: String, port: UInt16, deadline: Deadline) throws(TransportError)
        -> [UDPSocketAddress]
    {
        if UDPEndpoint.isIPv4Literal(host) || UDPEndpoint.isIPv6Literal(host) {
            return try addresses(host: host, port: port, numericOnly: true)
        }
        let pending = PendingResolution()
        let started = OSThread.detach(name: "udp resolve \(host)") {
            pending.finish(
                Result { () throws(TransportError) in
                    try addresses(host: host, port: port, numericOnly: false)
                })
        }
        guard started else {
            throw TransportError(.system, "Cannot start a thread to look up the host name '\(host)'.")
        }
        guard let result = pending.wait(until: deadline) else {
            throw TransportError(.timeout, "Looking up the host name '\(host)' did not finish in time.")
        }
        return try result.get()
    }

    /// `getaddrinfo` for UDP: every address copied out before `freeaddrinfo`, IPv4 ones mapped.
    static func addresses(host: String, port: UInt16, numericOnly: Bool) throws(TransportError)
        -> [UDPSocketAddress]
    {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (numericOnly ? AI_NUMERICHOST : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0 else {
            let reason = gai_strerror(rc).map { String(cString: $0) } ?? "error \(rc)"
            switch rc {
            case EAI_NONAME, EAI_AGAIN, EAI_FAIL, glibcNoData, glibcAddressFamily:
                throw TransportError(.noDevice, "The host '\(host)' could not be found (\(reason)).")
            default:
                throw TransportError(.system, "Looking up the host '\(host)' failed (\(reason)).")
            }
        }
        defer { freeaddrinfo(list) }
        var found: [UDPSocketAddress] = []
        var cursor = list
        var walked = 0
        while let entry = cursor, walked < maxEntries, found.count < maxAddresses {
            walked += 1
            cursor = entry.pointee.ai_next
            guard let raw = entry.pointee.ai_addr else { continue }
            let length = Int(entry.pointee.ai_addrlen)
            let address: UDPSocketAddress
            switch Int32(raw.pointee.sa_family) {
            case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
                address = UDPSocketAddress(
                    ipv4: UnsafeRawPointer(raw).loadUnaligned(as: sockaddr_in.self))
            case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
                address = UDPSocketAddress(
                    ipv6: UnsafeRawPointer(raw).loadUnaligned(as: sockaddr_in6.self))
            default:
                continue
            }
            if !found.contains(address) { found.append(address) }
        }
        guard !found.isEmpty else {
            throw TransportError(.noDevice, "The host '\(host)' has no IPv4 or IPv6 address.")
        }
        return found
    }
}

/// The outcome of a lookup on a helper thread, handed to whoever waits for it.
private final class PendingResolution: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = ConditionLock()
    private var result: Result<[UDPSocketAddress], TransportError>?

    func finish(_ value: Result<[UDPSocketAddress], TransportError>) {
        condition.lock()
        result = value
        condition.broadcast()
        condition.unlock()
    }

    /// The result, or nil when `deadline` passed first.
    func wait(until deadline: Deadline) -> Result<[UDPSocketAddress], TransportError>? {
        condition.lock()
        defer { condition.unlock() }
        while result == nil {
            let left = deadline.remaining
            guard left > .zero else { break }
            _ = condition.wait(until: .now + left)
        }
        return result
    }
}
