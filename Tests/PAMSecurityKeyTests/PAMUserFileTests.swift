import Foundation
import TestProcesses
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An unprivileged account made for one test with useradd (a unique name, its home in the
/// bed's work directory, its own group) and removed with userdel when the test is done.
final class TestUser {
    let name = "skpam" + String(UUID().uuidString.lowercased().prefix(8))
    let home: String
    let uid: uid_t
    let gid: gid_t

    init(bed: PAMBed) throws {
        home = bed.path("home-\(name)")
        let made = try bed.run([
            "/usr/sbin/useradd", "--no-create-home", "--home-dir", home, "--shell", "/usr/sbin/nologin",
            "--user-group", name,
        ])
        guard made.status == 0 else { throw BedError("useradd failed: \(made.stderrText)") }
        guard let entry = getpwnam(name) else { throw BedError("useradd made no \(name)") }
        uid = entry.pointee.pw_uid
        gid = entry.pointee.pw_gid
        try makeDirectory(home)
    }

    deinit {
        _ = try? TestProcess.run("/usr/sbin/userdel", [name], timeout: .seconds(30))
    }

    /// A directory owned by the user, mode 0700.
    func makeDirectory(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chown(path, uid, gid)
        chmod(path, 0o700)
    }

    /// Writes `text` at `path` (its directory made the user's), owned by `owner` (the user by
    /// default) and group `group` (theirs by default), mode `mode`.
    func write(_ text: String, to path: String, owner: uid_t? = nil, group: gid_t? = nil, mode: mode_t = 0o600) throws {
        try makeDirectory((path as NSString).deletingLastPathComponent)
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chown(path, owner ?? uid, group ?? gid)
        chmod(path, mode)
    }

    /// pam-u2f's default file: `~/.config/Yubico/u2f_keys`.
    var defaultFile: String { home + "/.config/Yubico/u2f_keys" }
}

/// The per-user authorization file, read by the module as pam-u2f reads it: with the user's
/// file identity (setfsuid/setfsgid), without following a symbolic link, and refused unless
/// owned by the user (or root) and writable by no one else. pamtester runs as root (CI does)
/// for a test user made with useradd.
@Suite(.serialized, .enabled(if: geteuid() == 0, "adds a user and writes /etc/pam.d: needs root"))
struct PAMUserFileTests {
    /// The nobody account and nogroup group (Debian's 65534): another user's identity.
    static let nobody: uid_t = 65534
    static let nogroup: gid_t = 65534

    /// A bed with a test user, a UDP key, the line enrolled for the user, and the module on
    /// the user's own file (no `authfile=`), with `debug` into debug.log.
    func prepared() throws -> (bed: PAMBed, user: TestUser, line: String) {
        let bed = try PAMBed()
        let user = try TestUser(bed: bed)
        let key = try bed.serveUDP(name: "key")
        let line = try bed.enroll(user: user.name, device: key)
        #expect(line.hasPrefix(user.name + ":"))
        let debug = try bed.writeAuthFile("debug.log", "")
        try bed.writeModule(["origin=\(PAMBed.origin)", "udp=\(key)", "timeout=20", "debug", "debug_file=\(debug)"])
        return (bed, user, line)
    }

    /// pamtester for `user` with XDG_CONFIG_HOME removed from its environment, or set to `xdg`.
    func pamtester(_ bed: PAMBed, _ user: TestUser, xdg: String? = nil) throws -> ProcessOutput {
        let environment = xdg.map { ["/usr/bin/env", "XDG_CONFIG_HOME=\($0)"] } ?? ["/usr/bin/env", "-u", "XDG_CONFIG_HOME"]
        return try bed.run(environment + ["/usr/bin/pamtester", "-v", bed.service, user.name, "authenticate"])
    }

    func debugLog(_ bed: PAMBed) throws -> String {
        try String(contentsOfFile: bed.path("debug.log"), encoding: .utf8)
    }

    @Test func ownFileAuthenticates() throws {
        let (bed, user, line) = try prepared()
        try user.write(line + "\n", to: user.defaultFile)
        let result = try pamtester(bed, user)
        #expect(result.status == 0, "\(result.stdoutText) \(result.stderrText)")
        #expect(result.stdoutText.contains(PAMText.success))
        // The same file at $XDG_CONFIG_HOME/Yubico/u2f_keys, when the variable names a directory.
        try FileManager.default.moveItem(atPath: user.home + "/.config", toPath: user.home + "/xdg")
        #expect(try pamtester(bed, user).stderrText.contains(PAMText.userUnknown))
        let xdg = try pamtester(bed, user, xdg: user.home + "/xdg")
        #expect(xdg.status == 0, "\(xdg.stdoutText) \(xdg.stderrText)")
    }

    /// Read with the user's identity: a file root may read but the user may not (root's, 0600)
    /// cannot be opened, although the module runs as root.
    @Test func readWithTheUsersIdentity() throws {
        let (bed, user, line) = try prepared()
        try user.write(line + "\n", to: user.defaultFile, owner: 0, group: 0, mode: 0o600)
        let result = try pamtester(bed, user)
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authInfoUnavailable), "\(result.stderrText)")
        let log = try debugLog(bed)
        #expect(log.contains(user.defaultFile) && log.contains("Permission denied"), "\(log)")
        // Root's file readable by the user (0644) is accepted, as pam-u2f accepts it.
        chmod(user.defaultFile, 0o644)
        let readable = try pamtester(bed, user)
        #expect(readable.status == 0, "\(readable.stdoutText) \(readable.stderrText)")
    }

    @Test func fileOfAnotherUserRefused() throws {
        let (bed, user, line) = try prepared()
        try user.write(line + "\n", to: user.defaultFile, owner: Self.nobody, mode: 0o644)
        let result = try pamtester(bed, user)
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authInfoUnavailable), "\(result.stderrText)")
        #expect(try debugLog(bed).contains("owned by neither \(user.name) nor root"))
    }

    /// Writable by a group other than the user's, or by anyone: refused; the same file
    /// writable by the user alone is read.
    @Test(arguments: [(0o620, "a group other than"), (0o602, "anyone may write")] as [(mode_t, String)])
    func writableByOthersRefused(mode: mode_t, why: String) throws {
        let (bed, user, line) = try prepared()
        try user.write(line + "\n", to: user.defaultFile, group: Self.nogroup, mode: mode)
        let result = try pamtester(bed, user)
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authInfoUnavailable), "\(result.stderrText)")
        let log = try debugLog(bed)
        #expect(log.contains(user.defaultFile) && log.contains(why), "\(log)")
        chmod(user.defaultFile, 0o600)
        let fixed = try pamtester(bed, user)
        #expect(fixed.status == 0, "\(fixed.stdoutText) \(fixed.stderrText)")
    }

    @Test func symbolicLinkRefused() throws {
        let (bed, user, line) = try prepared()
        let target = user.home + "/real_keys"
        try user.write(line + "\n", to: target)
        try user.makeDirectory((user.defaultFile as NSString).deletingLastPathComponent)
        try FileManager.default.createSymbolicLink(atPath: user.defaultFile, withDestinationPath: target)
        lchown(user.defaultFile, user.uid, user.gid)
        let result = try pamtester(bed, user)
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authInfoUnavailable), "\(result.stderrText)")
        #expect(try debugLog(bed).contains("it is a symbolic link"))
    }
}
