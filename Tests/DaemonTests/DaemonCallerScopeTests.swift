import Foundation
import Testing

/// The system bus's caller rule (active seat, per systemd-logind), tried on a private bus with
/// `--callers active-seat`. This machine runs no logind, so the test's own calls come from no
/// login session: they are refused unless a policy file allows their uid or group.
extension DaemonTests {
    /// Whether this process is in a systemd-logind session (its cgroup is a session scope): then
    /// the refusals below are not what the rule says, and those tests do not run.
    static let inLoginSession: Bool = {
        let cgroup = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)) ?? ""
        return cgroup.contains("/session-") && cgroup.contains(".scope")
    }()

    @Test(.enabled(if: !inLoginSession, "the test process is in a login session"))
    func activeSeatScopeRefusesCallersOutsideALoginSession() throws {
        let bed = try DaemonBed(keys: 1, pin: nil, arguments: ["--callers", "active-seat"], refusesUs: true)
        defer { bed.stop() }
        for method in ["ListDevices", "GetClientCapabilities"] {
            let refused = try bed.gdbus(method)
            #expect(refused.status != 0)
            #expect(
                refused.stderr.contains("org.securitykey.Daemon1.Error.SecurityError"), "\(refused.stderr)")
            #expect(refused.stderr.contains("is in no login session"), "\(refused.stderr)")
        }
        let ceremony = try bed.gdbus(
            "GetCredential", ["https://example.org", "", "{\"challenge\":\"AAAA\",\"rpId\":\"example.org\"}"])
        #expect(ceremony.stderr.contains("org.securitykey.Daemon1.Error.SecurityError"), "\(ceremony.stderr)")
        #expect(ceremony.stderr.contains("active session of a seat"))
    }

    @Test(.enabled(if: !inLoginSession, "the test process is in a login session"))
    func aPolicyGroupLineAdmitsItsMembersOnly() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("seat-policy-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ownGroup = String(cString: getgrgid(getegid()).pointee.gr_name)
        // A group the test process is not in: still refused.
        let otherGID = (1..<60000).first { gid in
            getgrgid(gid_t(gid)) != nil && gid_t(gid) != getegid()
                && !supplementaryGroups().contains(gid_t(gid))
        }
        let other = try #require(
            otherGID.flatMap { getgrgid(gid_t($0)) }.map { String(cString: $0.pointee.gr_name) })
        let stranger = directory.appendingPathComponent("stranger")
        try "allow-group \(other)\n".write(to: stranger, atomically: true, encoding: .utf8)
        do {
            let bed = try DaemonBed(
                keys: 1, pin: nil, policy: stranger.path, arguments: ["--callers", "active-seat"],
                refusesUs: true)
            defer { bed.stop() }
            #expect(try bed.gdbus("ListDevices").stderr.contains("Error.SecurityError"))
        }
        let member = directory.appendingPathComponent("member")
        try "allow-group \(ownGroup)\n".write(to: member, atomically: true, encoding: .utf8)
        let bed = try DaemonBed(
            keys: 1, pin: nil, policy: member.path, arguments: ["--callers", "active-seat"])
        defer { bed.stop() }
        let listed = try bed.gdbus("ListDevices")
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("udp:127.0.0.1:\(bed.ports[0])"))
    }

    @Test func unknownUsersAndGroupsInThePolicyStopTheDaemon() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-policy-\(UUID())")
        try "allow-group no-such-group-securitykey\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let out = try DaemonBed.run(
            DaemonBed.binaries.appendingPathComponent("securitykeyd").path,
            ["--address", "unix:path=/nonexistent", "--policy", file.path])
        #expect(out.status != 0)
        #expect(out.stderr.contains("allow-group takes the name of a group of this system"), "\(out.stderr)")
        let scope = try DaemonBed.run(
            DaemonBed.binaries.appendingPathComponent("securitykeyd").path, ["--callers", "everyone"])
        #expect(scope.stderr.contains("--callers takes same-user or active-seat"))
    }
}

/// The test process's supplementary groups.
func supplementaryGroups() -> [gid_t] {
    var groups = [gid_t](repeating: 0, count: 256)
    let count = getgroups(Int32(groups.count), &groups)
    return count > 0 ? Array(groups.prefix(Int(count))) : []
}
