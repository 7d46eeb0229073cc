import CSystemExtensions
import Glibc

/// The account a PAM call authenticates, from the password database.
public struct PAMUser: Hashable, Sendable {
    public var name: String
    public var uid: uid_t
    public var gid: gid_t
    public var home: String

    /// Creates a user.
    public init(name: String, uid: uid_t, gid: gid_t, home: String) {
        self.name = name
        self.uid = uid
        self.gid = gid
        self.home = home
    }

    /// The account `name` (getpwnam_r), or nil when there is none or it has no absolute home.
    public static func named(_ name: String) -> PAMUser? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        let status = getpwnam_r(name, &entry, &buffer, buffer.count, &result)
        guard status == 0, result != nil, let dir = entry.pw_dir else { return nil }
        let home = String(cString: dir)
        guard home.hasPrefix("/") else { return nil }
        return PAMUser(name: name, uid: entry.pw_uid, gid: entry.pw_gid, home: home)
    }
}

/// The few system calls the module makes outside the device layer, one wrapper each.
public enum PAMSystem {
    /// This machine's host name (gethostname), for the default origin `pam://HOST`.
    public static func hostName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The variable `name` unless this process is privileged (secure_getenv: nil in a setuid
    /// or setgid program, or one with capabilities, where the invoking user set it).
    public static func secureEnvironment(_ name: String) -> String? {
        securitykey_secure_getenv(name).map { String(cString: $0) }
    }

    /// Whether the process runs with root's effective identity.
    public static var isRoot: Bool { geteuid() == 0 }

    /// Runs `body` with the calling thread's file-system identity switched to `user`
    /// (setfsuid and setfsgid, which change this thread only), when running as root; as is
    /// otherwise (a process that is not root can open only what it may anyway).
    static func withFileIdentity<T>(of user: PAMUser?, _ body: () throws(PAMFailure) -> T) throws(PAMFailure) -> T {
        guard let user, isRoot, user.uid != 0 else { return try body() }
        let previousGID = securitykey_setfsgid(user.gid)
        let previousUID = securitykey_setfsuid(user.uid)
        defer {
            _ = securitykey_setfsuid(uid_t(bitPattern: previousUID))
            _ = securitykey_setfsgid(gid_t(bitPattern: previousGID))
        }
        // setfsuid reports the identity before the call: a second call tells whether the first took.
        guard securitykey_setfsuid(user.uid) == Int32(bitPattern: user.uid),
            securitykey_setfsgid(user.gid) == Int32(bitPattern: user.gid)
        else {
            throw PAMFailure(.systemError, "Cannot take the identity of \(user.name) to read their file.")
        }
        return try body()
    }
}

/// Reading an authorization file as pam-u2f reads it, and then some: opened without following a
/// final symbolic link, with the user's identity for a file in their home; refused unless it
/// is a regular file owned by the user or root, writable by no one else, and at most
/// ``AuthorizationFile/maximumSize``.
public enum SecureFile {
    /// The bytes of `path`, or nil when it does not exist. `user` is whose file it is (opened
    /// with their identity when `asUser`); the owner must be them or root.
    public static func read(_ path: String, user: PAMUser, asUser: Bool) throws(PAMFailure) -> [UInt8]? {
        try PAMSystem.withFileIdentity(of: asUser ? user : nil) { () throws(PAMFailure) -> [UInt8]? in
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK)
            guard fd >= 0 else {
                let code = errno
                if code == ENOENT || code == ENOTDIR { return nil }
                if code == ELOOP { throw refused(path, "it is a symbolic link") }
                throw refused(path, "it cannot be opened: \(String(cString: strerror(code)))")
            }
            defer { close(fd) }
            var status = stat()
            guard fstat(fd, &status) == 0 else { throw refused(path, "it cannot be examined") }
            guard status.st_mode & S_IFMT == S_IFREG else { throw refused(path, "it is not a regular file") }
            guard status.st_uid == user.uid || status.st_uid == 0 else {
                throw refused(path, "it is owned by neither \(user.name) nor root")
            }
            guard status.st_mode & S_IWOTH == 0 else { throw refused(path, "anyone may write to it") }
            guard status.st_mode & S_IWGRP == 0 || status.st_gid == user.gid || status.st_gid == 0 else {
                throw refused(path, "a group other than \(user.name)'s may write to it")
            }
            guard status.st_size <= AuthorizationFile.maximumSize else { throw refused(path, "it is larger than 1 MiB") }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if count == 0 { break }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw refused(path, "it cannot be read")
                }
                bytes += chunk[0..<count]
                guard bytes.count <= AuthorizationFile.maximumSize else {
                    throw refused(path, "it is larger than 1 MiB")
                }
            }
            return bytes
        }
    }

    static func refused(_ path: String, _ why: String) -> PAMFailure {
        PAMFailure(.authInfoUnavailable, "The authorization file \(path) is refused: \(why).")
    }
}
