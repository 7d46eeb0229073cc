import CSDBus
import Glibc

/// Who sent a method call, as the bus daemon vouches for it (`sd_bus_query_sender_creds`):
/// the uid and pid come from the kernel through the bus; the executable is read from
/// `/proc/PID/exe` and can race with the process exiting and its pid being reused.
public struct BusCaller: Hashable, Sendable {
    /// The caller's unique connection name (`:1.42`).
    public var uniqueName: String
    /// The caller's effective uid, when the bus told it.
    public var uid: UInt32?
    /// The caller's pid, when the bus told it.
    public var pid: Int32?
    /// The caller's executable, when it could be read.
    public var executable: String?
    /// The caller's effective gid and supplementary gids, as far as they could be read.
    public var groups: [UInt32]
    /// The caller's login session as systemd-logind records it (sd-login).
    public var login: LoginSeat

    /// Creates a caller description.
    public init(
        uniqueName: String, uid: UInt32?, pid: Int32?, executable: String?, groups: [UInt32] = [],
        login: LoginSeat = .unknown
    ) {
        self.uniqueName = uniqueName
        self.uid = uid
        self.pid = pid
        self.executable = executable
        self.groups = groups
        self.login = login
    }
}

/// Where a caller sits, in systemd-logind's terms: whether its process belongs to a session that
/// is on a seat and is the seat's active one (`sd_pid_get_session`, `sd_session_is_active`,
/// `sd_session_get_seat`).
public enum LoginSeat: Hashable, Sendable {
    /// The process is in the active session of `seat`.
    case active(session: String, seat: String)
    /// The process is in a session on `seat` that is not in the foreground.
    case inactive(session: String, seat: String)
    /// The process is in a session without a seat (SSH, a cron job).
    case noSeat(session: String)
    /// The process is in no login session (a system service, or no logind on this machine).
    case noSession
    /// The bus did not tell the caller's pid.
    case unknown

    /// The login seat of process `pid`, read from its cgroup and logind's state in /run (no bus
    /// call; the files can race with the session ending, as any pid-based check can).
    public static func of(pid: Int32) -> LoginSeat {
        var session: UnsafeMutablePointer<CChar>?
        guard sd_pid_get_session(pid, &session) >= 0, let session else { return .noSession }
        defer { free(session) }
        let name = String(cString: session)
        var seat: UnsafeMutablePointer<CChar>?
        guard sd_session_get_seat(name, &seat) >= 0, let seat else { return .noSeat(session: name) }
        defer { free(seat) }
        let seatName = String(cString: seat)
        return sd_session_is_active(name) > 0
            ? .active(session: name, seat: seatName) : .inactive(session: name, seat: seatName)
    }
}
