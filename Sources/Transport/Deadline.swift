/// The moment an operation must be finished by: the one shape time takes from the caller (a
/// CLI `--timeout`, a provider request's `timeout`, a daemon call) down to each bounded read
/// slice of a transport.
///
/// Layers pass the deadline on unchanged; only the bottom turns it into the milliseconds a C
/// call takes (``slice(atMost:)``). A layer that must bound one step more tightly (a getInfo
/// probe, a PIN retry count) uses ``capped(at:)``, which never extends the caller's deadline.
public struct Deadline: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The instant on the continuous clock (it keeps counting while the machine sleeps).
    public var instant: ContinuousClock.Instant

    /// A deadline at `instant`.
    public init(_ instant: ContinuousClock.Instant) { self.instant = instant }

    /// The deadline `duration` from now.
    public static func after(_ duration: Duration) -> Deadline {
        Deadline(.now + duration)
    }

    /// A deadline that has already passed: operations given it fail at once with a timeout.
    public static var expired: Deadline { Deadline(.now) }

    /// Time left, zero once the deadline has passed.
    public var remaining: Duration {
        let left = instant - .now
        return left > .zero ? left : .zero
    }

    /// Whether the deadline has passed.
    public var hasPassed: Bool { ContinuousClock.now >= instant }

    /// This deadline, or `duration` from now when that comes sooner.
    public func capped(at duration: Duration) -> Deadline {
        Swift.min(self, .after(duration))
    }

    /// The length of the next blocking wait: the time left, but at most `slice`, so that a
    /// loop around a blocking call sees cancellation and the deadline promptly.
    public func slice(atMost slice: Duration) -> Duration {
        Swift.min(remaining, slice)
    }

    /// Throws ``TransportError/Code/timeout`` naming `operation` once the deadline has passed.
    public func check(_ operation: @autoclosure () -> String) throws(TransportError) {
        if hasPassed { throw timeoutError(operation()) }
    }

    /// The error for an operation the deadline ended.
    public func timeoutError(_ operation: String) -> TransportError {
        TransportError(.timeout, "\(operation) did not finish before the deadline.")
    }

    public static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.instant < rhs.instant }

    public var description: String {
        let left = instant - .now
        return left > .zero ? "in \(left)" : "passed"
    }
}
