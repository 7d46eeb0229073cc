import CTAP2
import _SecurityKeyInternals

/// An OpenSSH security-key private key file (`ssh-keygen -t ecdsa-sk` or `ed25519-sk`, PROTOCOL.key
/// and PROTOCOL.u2f), read as pam-u2f's `sshformat` reads it: the one credential it holds. The
/// file holds no secret of a security key (the private part is the key handle), but it must
/// be unencrypted for its key handle to be read.
public enum SSHKeyFile {
    static let header = "-----BEGIN OPENSSH PRIVATE KEY-----"
    static let trailer = "-----END OPENSSH PRIVATE KEY-----"
    static let magic = Array("openssh-key-v1".utf8) + [0]
    static let ecdsaType = "sk-ecdsa-sha2-nistp256@openssh.com"
    static let ed25519Type = "sk-ssh-ed25519@openssh.com"
    /// OpenSSH's key flags (sk-api.h).
    static let userPresenceRequired: UInt8 = 0x01
    static let userVerificationRequired: UInt8 = 0x04

    /// The credential of the key file `text` and the application (RP ID) it was made for.
    public static func credential(in text: [UInt8]) throws(PAMFailure) -> (credential: PAMCredential, application: String) {
        guard text.count <= AuthorizationFile.maximumSize, let string = String(validating: text, as: UTF8.self) else {
            throw malformed("it is not an OpenSSH key file")
        }
        let lines = string.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
        guard let first = lines.firstIndex(of: Substring(header)), let last = lines.firstIndex(of: Substring(trailer)),
            first < last
        else { throw malformed("it has no OpenSSH private key block") }
        let body = lines[(first + 1)..<last].joined()
        guard let blob = Base64.decode(body, alphabet: .standard, padding: .optional) else {
            throw malformed("the key block is not base64")
        }
        var reader = SSHWireReader(blob)
        guard try reader.bytes(magic.count) == magic else { throw malformed("it is not an openssh-key-v1 key") }
        let cipher = try reader.string()
        _ = try reader.string()  // kdfname
        _ = try reader.string()  // kdfoptions
        guard cipher == Array("none".utf8) else {
            throw malformed("the key file is encrypted (a passphrase); pam_securitykey reads unencrypted key files only")
        }
        guard try reader.uint32() == 1 else { throw malformed("the file holds more than one key") }
        _ = try reader.string()  // the public key, repeated in the private section
        var section = SSHWireReader(try reader.string())
        guard try section.uint32() == section.uint32() else { throw malformed("its check values differ") }
        let type = String(decoding: try section.string(), as: UTF8.self)
        let algorithm: COSEAlgorithm
        let publicKey: [UInt8]
        switch type {
        case ecdsaType:
            guard try section.string() == Array("nistp256".utf8) else { throw malformed("the curve is not nistp256") }
            let point = try section.string()
            guard point.count == 65, point.first == 0x04 else { throw malformed("the P-256 point is not 65 bytes") }
            (algorithm, publicKey) = (.es256, Array(point.dropFirst()))
        case ed25519Type:
            let key = try section.string()
            guard key.count == 32 else { throw malformed("the Ed25519 key is not 32 bytes") }
            (algorithm, publicKey) = (.edDSA, key)
        default:
            throw malformed("the key type \"\(type.prefix(48))\" is not a security key type")
        }
        guard let application = String(validating: try section.string(), as: UTF8.self), !application.isEmpty else {
            throw malformed("the application is not text")
        }
        let flags = try section.byte()
        let keyHandle = try section.string()
        guard !keyHandle.isEmpty else { throw malformed("the key handle is empty") }
        _ = try section.string()  // reserved
        _ = try section.string()  // comment
        // Padding: 1, 2, 3, … up to the cipher's block size.
        let padding = section.remaining
        guard padding.count < 255, padding.enumerated().allSatisfy({ $0.element == UInt8($0.offset + 1) }) else {
            throw malformed("its padding is wrong")
        }
        var attributes: PAMCredential.Attributes = []
        if flags & userPresenceRequired != 0 { attributes.insert(.presence) }
        if flags & userVerificationRequired != 0 { attributes.insert(.verification) }
        let credential = PAMCredential(
            credentialID: keyHandle, algorithm: algorithm, publicKey: publicKey, attributes: attributes)
        _ = try credential.coseKey()
        return (credential, application)
    }

    static func malformed(_ why: String) -> PAMFailure { PAMCredential.malformed(why) }
}

/// Reads SSH wire encoding (RFC 4251 §5): big-endian uint32 and length-prefixed strings, every
/// length checked against what is left.
struct SSHWireReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// What is left.
    var remaining: ArraySlice<UInt8> { bytes[offset...] }

    mutating func bytes(_ count: Int) throws(PAMFailure) -> [UInt8] {
        guard count >= 0, count <= bytes.count - offset else { throw SSHKeyFile.malformed("it is cut short") }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func byte() throws(PAMFailure) -> UInt8 {
        try bytes(1)[0]
    }

    mutating func uint32() throws(PAMFailure) -> UInt32 {
        try bytes(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func string() throws(PAMFailure) -> [UInt8] {
        let length = try uint32()
        guard length <= UInt32(bytes.count - offset) else { throw SSHKeyFile.malformed("a length runs past its end") }
        return try bytes(Int(length))
    }
}
