/// Which bus to connect to.
public enum BusAddress: Hashable, Sendable {
    /// The user's session bus (`sd_bus_open_user`).
    case session
    /// The system bus (`sd_bus_open_system`).
    case system
    /// A bus at this D-Bus address (`unix:path=...`), as a client of its message bus.
    case address(String)
}
