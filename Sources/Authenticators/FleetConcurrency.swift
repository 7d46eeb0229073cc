import Transport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How many keys a fleet inspects at once: by default every key present, bounded only by what
/// the transports allow.
///
/// - PC/SC: pcsc-lite serves at most 16 readers (`PCSCLITE_MAX_READERS_CONTEXTS`), so no more
///   than 16 cards are ever inspected at once; each holds a pcscd context of its own.
/// - Every key holds one file descriptor while it is inspected (its hidraw node, its UDP socket,
///   its pcscd socket), so the keys in flight stay within the process's open-file limit
///   (`RLIMIT_NOFILE`), with room left for everything else the process has open.
/// - The caller may cap the whole at ``limit`` (`fleet --concurrency N`).
public struct FleetConcurrency: Sendable, Hashable {
    /// The caller's own cap on keys in flight; nil for none.
    public var limit: Int?
    /// The most keys of a transport in flight at once; a transport not named has no bound of
    /// its own.
    public var transportLimits: [TransportKind: Int]
    /// The most keys in flight at once across every transport (file descriptors).
    public var descriptorLimit: Int

    /// pcsc-lite's most readers (`PCSCLITE_MAX_READERS_CONTEXTS` in pcsclite.h).
    public static let pcscReaders = 16
    /// File descriptors left to the rest of the process (standard streams, udev, the PC/SC
    /// listing context, the UDP loop's wake pipe, log files).
    static let reservedDescriptors = 32
    /// File descriptors counted per key in flight: one, doubled for what a transport may open
    /// on the side.
    static let descriptorsPerKey = 2

    /// Bounds with `limit` on top of the transports' own, for a process that may keep
    /// `openFiles` descriptors open.
    public init(limit: Int? = nil, openFiles: Int) {
        self.limit = limit.map { max(1, $0) }
        transportLimits = [.nfc: Self.pcscReaders]
        descriptorLimit = max(1, (openFiles - Self.reservedDescriptors) / Self.descriptorsPerKey)
    }

    /// Bounds with `limit` on top of the transports' own, for this process's open-file limit
    /// (`getrlimit(RLIMIT_NOFILE)`, the soft limit).
    public static func system(limit: Int? = nil) -> FleetConcurrency {
        FleetConcurrency(limit: limit, openFiles: openFileLimit())
    }

    /// The soft `RLIMIT_NOFILE` (`getrlimit`), 1024 when it cannot be read or is unlimited.
    static func openFileLimit() -> Int {
        var limits = rlimit()
        #if canImport(Glibc)
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        // RLIM_INFINITY is all ones; any limit beyond Int32 is as good as none.
        guard getrlimit(resource, &limits) == 0, limits.rlim_cur < rlim_t(Int32.max) else { return 1024 }
        return Int(limits.rlim_cur)
    }

    /// The most keys in flight at once across every transport.
    public var overall: Int { min(limit ?? .max, descriptorLimit) }

    /// Whether one more key of `transport` may start while `total` keys are in flight, `ofTransport`
    /// of them over `transport`.
    public func admits(_ transport: TransportKind, total: Int, ofTransport: Int) -> Bool {
        guard total < overall else { return false }
        guard let cap = transportLimits[transport] else { return true }
        return ofTransport < cap
    }

    /// One sentence for people: what bounds this run.
    public var summary: String {
        var parts: [String] = []
        if let limit { parts.append("at most \(limit) at once (--concurrency)") }
        parts.append("at most \(descriptorLimit) by the open-file limit")
        parts.append("at most \(Self.pcscReaders) PC/SC cards (pcsc-lite's readers)")
        return "Keys inspected " + parts.joined(separator: ", ") + "."
    }
}

/// Which keys start when, under a ``FleetConcurrency``: keys start in their order, each as soon
/// as neither the overall bound nor its transport's is reached; a key whose transport is full
/// does not hold back keys of other transports behind it. A value without I/O, so the bounds
/// can be checked without timing anything.
struct FleetSchedule {
    let transports: [TransportKind]
    let bounds: FleetConcurrency
    private var waiting: [Int]
    private var running: [TransportKind: Int] = [:]
    /// How many keys are in flight.
    private(set) var inFlight = 0

    /// A schedule of keys reached over `transports` (one per key, in order).
    init(_ transports: [TransportKind], bounds: FleetConcurrency) {
        self.transports = transports
        self.bounds = bounds
        waiting = Array(transports.indices)
    }

    /// Whether every key has started.
    var isDrained: Bool { waiting.isEmpty }

    /// How many keys of `transport` are in flight.
    func inFlight(_ transport: TransportKind) -> Int { running[transport, default: 0] }

    /// The keys (indices) that may start now, in order, counted as in flight.
    mutating func startable() -> [Int] {
        var started: [Int] = []
        var position = 0
        while position < waiting.count, inFlight < bounds.overall {
            let index = waiting[position]
            let transport = transports[index]
            guard bounds.admits(transport, total: inFlight, ofTransport: running[transport, default: 0])
            else {
                position += 1
                continue
            }
            waiting.remove(at: position)
            running[transport, default: 0] += 1
            inFlight += 1
            started.append(index)
        }
        return started
    }

    /// Records that the key at `index` finished.
    mutating func finished(_ index: Int) {
        let transport = transports[index]
        running[transport, default: 1] -= 1
        inFlight -= 1
    }
}
