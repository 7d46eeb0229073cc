import CSDBus

/// The service manager's notification socket (`sd_notify`), for readiness and stopping.
public enum ServiceManager {
    /// Sends `state` (`READY=1`, `STOPPING=1`, `STATUS=...`) when run under systemd; a no-op otherwise.
    public static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
