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
        for (index, line) in lines(of: string).enumerated() {
            if line.isEmpty { continue }
            do throws(PAMFailure) {
                let (name, credentials) = try parse(line: line)
                if sameBytes(name, user) { found = Array(credentials.prefix(maxDevices)) }
            } catch {
                throw PAMCredential.malformed("line \(index + 1): \(error.message)")
            }
        }
        return found
    }

    /// The lines of `text`, split at each LF with the CR before it dropped. Split, like every
    /// field of the file, on bytes as pam-u2f splits them: as Swift Characters, CR LF is one
    /// grapheme that is not "\n" (so a CRLF file was one long line), and ":" or "," followed
    /// by a combining mark is one grapheme that is not the separator.
    static func lines(of text: String) -> [Substring] {
        split(Substring(text), at: UInt8(ascii: "\n")).map(droppingCR)
    }

    /// `line` without the CR byte at its end, if it has one (a line of a CR LF file).
    static func droppingCR(_ line: Substring) -> Substring {
        line.utf8.last == UInt8(ascii: "\r") ? Substring(line.utf8.dropLast()) : line
    }

    /// `text` split at every `separator` byte (an ASCII character, so every piece is whole
    /// UTF-8), empty pieces kept.
    static func split(_ text: Substring, at separator: UInt8) -> [Substring] {
        text.utf8.split(separator: separator, omittingEmptySubsequences: false).map { Substring($0) }
    }

    /// Whether two names or words are the same bytes. Swift's `==` compares canonical
    /// equivalents equal ("é" and "e" with a combining acute, "K" and the Kelvin sign), which
    /// would give one account's line to another; pam-u2f compares bytes (strcmp).
    static func sameBytes(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }

    /// One line: the user name and the credentials.
    static func parse(line: Substring) throws(PAMFailure) -> (user: Substring, credentials: [PAMCredential]) {
        let fields = split(line, at: UInt8(ascii: ":"))
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
        let parts = split(field, at: UInt8(ascii: ","))
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
            if sameBytes(parts[0], "*") {
                handle = nil
            } else {
                guard let decoded = Base64.decode(parts[0], alphabet: .standard, padding: .optional), !decoded.isEmpty
                else { throw PAMCredential.malformed("the key handle is not base64") }
                handle = decoded
            }
            guard let publicKey = Base64.decode(parts[1], alphabet: .standard, padding: .optional) else {
                throw PAMCredential.malformed("the public key is not base64")
            }
            guard let type = PAMCredential.typeNames.first(where: { sameBytes($0.name, parts[2]) }) else {
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
        guard text.utf8.first == UInt8(ascii: "+") else {
            throw PAMCredential.malformed("the attributes do not start with +")
        }
        for word in split(text, at: UInt8(ascii: "+")).dropFirst() {
            if sameBytes(word, "presence") {
                attributes.insert(.presence)
            } else if sameBytes(word, "pin") {
                attributes.insert(.pin)
            } else if sameBytes(word, "verification") {
                attributes.insert(.verification)
            } else {
                throw PAMCredential.malformed("the attribute \"\(word.prefix(16))\" is not presence, pin or verification")
            }
        }
        return attributes
    }

    /// The line pam-u2f and this module read for `user` and `credentials`.
    public static func line(user: String, credentials: [PAMCredential]) -> String {
        ([user] + credentials.map(\.entry)).joined(separator: ":")
    }
}
