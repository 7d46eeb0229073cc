#if canImport(Glibc)
    import Glibc
#endif
import FoundationEssentials
import _SecurityKeyInternals
import SDBus

/// Who may use the daemon, and for which origins.
///
/// By default only callers of the daemon's own uid are served (session bus), or only callers in
/// the active login session of a seat (system bus), and any of them may claim any origin: the
/// bus tells who is calling, but not which web site a local program speaks for. A
/// configuration file narrows that by binding executables to the origins they may claim, and
/// widens who is served:
///
/// ```
/// # executable                 origins it may claim (exact, or https://*.domain for subdomains)
/// /usr/bin/example-browser     *
/// /usr/local/bin/example-app   https://example.org https://*.example.org
/// deny-unlisted                # callers whose executable is not listed are refused
/// allow-uid 1001               # another user allowed to call, wherever it sits
/// allow-user kiosk             # the same, by name
/// allow-group fido             # members of this group (effective or supplementary gid)
/// ```
struct CallerPolicy: Sendable {
    /// Whom the daemon serves when no allow-line names the caller.
    enum Scope: String, Sendable, CaseIterable {
        /// Callers of the daemon's own uid (the session bus default).
        case sameUser = "same-user"
        /// Callers in the active session of a seat, per systemd-logind (the system bus default).
        case activeSeat = "active-seat"
    }

    /// Whom the daemon serves besides the allow-lines.
    var scope: Scope = .sameUser
    /// Gids whose members are served (allow-group, allow-gid).
    var allowedGIDs: Set<UInt32> = []
    /// Origins per executable path; `*` allows any.
    var bindings: [String: [String]] = [:]
    /// Whether executables not listed are refused.
    var denyUnlisted = false
    /// Uids served besides the daemon's own.
    var allowedUIDs: Set<UInt32> = []
    /// The daemon's own uid.
    var ownUID: UInt32 = getuid()

    /// The most lines and bytes a policy file may have.
    static let maximumBytes = 64 * 1024

    /// Reads the policy file at `path`; errors name the line.
    init(contentsOf path: String) throws(PolicyError) {
        guard let data = FileIO.read(path: path, upTo: Self.maximumBytes + 1) else {
            throw PolicyError("Cannot read the policy file \(path).")
        }
        guard data.count <= Self.maximumBytes else {
            throw PolicyError("The policy file \(path) is larger than \(Self.maximumBytes) bytes.")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw PolicyError("The policy file \(path) is not UTF-8.")
        }
        try self.init(text: text, name: path)
    }

    /// The default policy: the daemon's own uid, any origin.
    init() {}

    /// Parses policy text.
    init(text: String, name: String = "policy") throws(PolicyError) {
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line =
                rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let first = words.first else { continue }
            switch first {
            case "deny-unlisted":
                denyUnlisted = true
            case "allow-uid":
                guard words.count == 2, let uid = UInt32(words[1]) else {
                    throw PolicyError("\(name) line \(index + 1): allow-uid takes one number.")
                }
                allowedUIDs.insert(uid)
            case "allow-gid":
                guard words.count == 2, let gid = UInt32(words[1]) else {
                    throw PolicyError("\(name) line \(index + 1): allow-gid takes one number.")
                }
                allowedGIDs.insert(gid)
            case "allow-user":
                guard words.count == 2, let entry = getpwnam(words[1]) else {
                    throw PolicyError(
                        "\(name) line \(index + 1): allow-user takes the name of a user of this system.")
                }
                allowedUIDs.insert(entry.pointee.pw_uid)
            case "allow-group":
                guard words.count == 2, let entry = getgrnam(words[1]) else {
                    throw PolicyError(
                        "\(name) line \(index + 1): allow-group takes the name of a group of this system.")
                }
                allowedGIDs.insert(entry.pointee.gr_gid)
            default:
                guard first.hasPrefix("/"), words.count >= 2 else {
                    throw PolicyError(
                        "\(name) line \(index + 1): expected an absolute executable path and the origins it may claim."
                    )
                }
                for origin in words.dropFirst() where origin != "*" && !origin.hasPrefix("https://") {
                    throw PolicyError("\(name) line \(index + 1): \(origin) is not * or an https origin.")
                }
                bindings[first, default: []] += words.dropFirst()
            }
        }
    }

    /// Why `caller` may not claim `origin`, or nil when it may.
    func refusal(_ caller: BusCaller, origin: String?) -> String? {
        guard let uid = caller.uid else { return "The bus did not tell the caller's uid." }
        let allowed = allowedUIDs.contains(uid) || caller.groups.contains(where: allowedGIDs.contains)
        if !allowed, let refusal = scopeRefusal(caller, uid: uid) { return refusal }
        guard let origin else { return nil }
        guard let executable = caller.executable, let allowed = bindings[executable] else {
            return denyUnlisted ? "This program is not allowed to use security keys." : nil
        }
        if allowed.contains("*") || allowed.contains(origin) { return nil }
        for pattern in allowed where pattern.hasPrefix("https://*.") {
            let domain = String(pattern.dropFirst("https://*.".count))
            if origin.hasPrefix("https://"), origin.dropFirst("https://".count).hasSuffix("." + domain) {
                return nil
            }
        }
        return "This program may not claim the origin \(origin)."
    }

    /// Why the scope does not cover `caller`, or nil when it does.
    func scopeRefusal(_ caller: BusCaller, uid: UInt32) -> String? {
        switch scope {
        case .sameUser:
            return uid == ownUID ? nil : "Callers of uid \(uid) are not served by this daemon."
        case .activeSeat:
            let only =
                "only callers in the active session of a seat are served (or those a policy file allows with allow-user or allow-group)."
            switch caller.login {
            case .active: return nil
            case .inactive(let session, let seat):
                return "The caller's login session \(session) is not the active one on \(seat); \(only)"
            case .noSeat(let session):
                return "The caller's login session \(session) is on no seat (remote or background); \(only)"
            case .noSession:
                return
                    "The caller (pid \(caller.pid ?? -1)) is in no login session systemd-logind knows; \(only)"
            case .unknown:
                return "The bus did not tell the caller's pid, so its seat is unknown; \(only)"
            }
        }
    }
}

/// A policy file that cannot be used.
struct PolicyError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
