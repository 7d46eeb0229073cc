#if canImport(Glibc)
    import Glibc
#endif
import FoundationEssentials

extension AuthorizationFile {
    /// Writes `text` (an authorization file) to `path`, creating its folder: to a temporary file
    /// beside it, renamed over it, mode 0644. The file holds public keys and key handles only;
    /// the modules refuse it when anyone but its owner may write it. Written by root into
    /// `user`'s home for them, it and its folder become theirs, as the modules read a file in a
    /// home with the user's identity.
    public static func install(_ text: String, at path: String, for user: String) throws {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url, options: .atomic)
        var attributes: [FileAttributeKey: Any] = [.posixPermissions: 0o644]
        if getuid() == 0, let account = PAMUser.named(user), account.uid != 0, path.hasPrefix(account.home + "/") {
            attributes[.ownerAccountID] = Int(account.uid)
            attributes[.groupOwnerAccountID] = Int(account.gid)
            try FileManager.default.setAttributes(
                [.ownerAccountID: Int(account.uid), .groupOwnerAccountID: Int(account.gid)], ofItemAtPath: directory.path)
        }
        try FileManager.default.setAttributes(attributes, ofItemAtPath: path)
    }

    /// Adds `credential` to `user`'s line of the authorization file at `path` (a new file, or a
    /// new line, when there is none), keeping its other lines (``adding(_:for:to:)``), once
    /// `confirm` returns (a prompt; what it throws stops the change), and writes it
    /// (``install(_:at:for:)``). Throws `PAMFailure` when the file is not one this may change,
    /// else the file system's error.
    public static func append(
        _ credential: PAMCredential, for user: String, at path: String, confirm: () throws -> Void
    ) throws {
        let existing = FileManager.default.fileExists(atPath: path) ? try Data(contentsOf: URL(fileURLWithPath: path)) : Data()
        let text = try adding(credential, for: user, to: Array(existing))
        try confirm()
        try install(text, at: path, for: user)
    }

    /// The file `securitykey pam enroll --append` writes for `user` by default: the one
    /// pam_u2f.so and pam_securitykey.so read (``PAMAuthentication/defaultAuthFile(for:sshFormat:)``),
    /// or `~/.config/Yubico/u2f_keys` in this process's home for a user the system does not know.
    public static func defaultPath(for user: String) -> String {
        guard let account = PAMUser.named(user) else {
            return FileManager.default.homeDirectoryForCurrentUser.path + "/.config/Yubico/u2f_keys"
        }
        return PAMAuthentication.defaultAuthFile(for: account, sshFormat: false)
    }
}
