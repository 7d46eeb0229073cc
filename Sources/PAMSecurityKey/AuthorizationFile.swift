import CTAP2
import _SecurityKeyInternals

/// pam-u2f's authorization mapping (pam_u2f(8) `authfile`): one line per user,
/// `USER:CREDENTIAL:CREDENTIAL...`, each credential either new-style
/// `KEYHANDLE,PUBLICKEY,TYPE,ATTRIBUTES` (standard base64, TYPE `es256`/`eddsa`/`rs256`,
/// ATTRIBUTES a run of `+presence`, `+pin`, `+verification`, possibly empty) or old-style
/// `KEYHANDLE,PUBLICKEY` (websafe base64 U2F key handle, hex uncompressed P-256 point).
///
/// The whole file is checked, every line of every user, and one malformed line refuses the
/// file: a file this module half understands is not trusted at all.
public enum AuthorizationFile {
    /// The longest file read (pam-u2f's lines are a few hundred bytes per credential).
    public static let maximumSize = 1 << 20

    /// The credentials listed for `user` in `text` (its last line, as pam-u2f takes it), at
    /// most `maxDevices`; nil when the user has no line. Throws when any line is malformed.
    public static func credentials(for user: String, in text: [UInt8], maxDevices: Int)
        throws(PAMFailure) -> [PAMCredential]?
    {
        guard text.count <= maximumSize else { throw PAMCredential.malformed("it is larger than 1 MiB") }
        guard let string = String(validating: text, as: UTF8.self) else {
            throw PAMCredential.malformed("it is not UTF-8 text")
        }
        var found: [PAMCredential]?
        for (index, line) in string.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.hasSuffix("\r") ? line.dropLast() : line
            if trimmed.isEmpty { continue }
            do throws(PAMFailure) {
                let (name, credentials) = try parse(line: trimmed)
                if name == user { found = Array(credentials.prefix(maxDevices)) }
            } catch {
                throw PAMCredential.malformed("line \(index + 1): \(error.message)")
            }
        }
        return found
    }

    /// One line: the user name and the credentials.
    static func parse(line: Substring) throws(PAMFailure) -> (user: Substring, credentials: [PAMCredential]) {
        let fields = line.split(separator: ":", omittingEmptySubsequences: false)
        guard let user = fields.first, !user.isEmpty else { throw PAMCredential.malformed("no user name") }
        guard fields.count >= 2 else { throw PAMCredential.malformed("no credential") }
        var credentials: [PAMCredential] = []
        for field in fields.dropFirst() {
            credentials.append(try credential(field))
        }
        return (user, credentials)
    }

    /// One credential field.
    static func credential(_ field: Substring) throws(PAMFailure) -> PAMCredential {
        let parts = field.split(separator: ",", omittingEmptySubsequences: false)
        switch parts.count {
        case 2:
            guard let handle = Base64.decode(parts[0], alphabet: .url, padding: .optional), !handle.isEmpty else {
                throw PAMCredential.malformed("the old-style key handle is not websafe base64")
            }
            guard let point = Hex.decode(String(parts[1])), point.count == 65, point.first == 0x04 else {
                throw PAMCredential.malformed("the old-style public key is not a hex uncompressed P-256 point")
            }
            let credential = PAMCredential(
                credentialID: handle, algorithm: .es256, publicKey: point, attributes: .presence, isOldFormat: true)
            _ = try credential.coseKey()
            return credential
        case 4:
            let handle: [UInt8]?
            if parts[0] == "*" {
                handle = nil
            } else {
                guard let decoded = Base64.decode(parts[0], alphabet: .standard, padding: .optional), !decoded.isEmpty
                else { throw PAMCredential.malformed("the key handle is not base64") }
                handle = decoded
            }
            guard let publicKey = Base64.decode(parts[1], alphabet: .standard, padding: .optional) else {
                throw PAMCredential.malformed("the public key is not base64")
            }
            guard let type = PAMCredential.typeNames.first(where: { $0.name == parts[2] }) else {
                throw PAMCredential.malformed("the COSE type \"\(parts[2].prefix(16))\" is not es256, eddsa or rs256")
            }
            let credential = PAMCredential(
                credentialID: handle, algorithm: type.algorithm, publicKey: publicKey,
                attributes: try attributes(parts[3]))
            _ = try credential.coseKey()
            return credential
        default:
            throw PAMCredential.malformed("a credential has \(parts.count) fields, not 4 (or 2 in the old style)")
        }
    }

    /// `+presence+pin+verification`, in any order, each at most once; empty is none.
    static func attributes(_ text: Substring) throws(PAMFailure) -> PAMCredential.Attributes {
        var attributes: PAMCredential.Attributes = []
        guard !text.isEmpty else { return attributes }
        guard text.hasPrefix("+") else { throw PAMCredential.malformed("the attributes do not start with +") }
        for word in text.dropFirst().split(separator: "+", omittingEmptySubsequences: false) {
            switch word {
            case "presence": attributes.insert(.presence)
            case "pin": attributes.insert(.pin)
            case "verification": attributes.insert(.verification)
            default: throw PAMCredential.malformed("the attribute \"\(word.prefix(16))\" is not presence, pin or verification")
            }
        }
        return attributes
    }

    /// The line pam-u2f and this module read for `user` and `credentials`.
    public static func line(user: String, credentials: [PAMCredential]) -> String {
        ([user] + credentials.map(\.entry)).joined(separator: ":")
    }
}
