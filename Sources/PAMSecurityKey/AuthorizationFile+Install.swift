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
}
