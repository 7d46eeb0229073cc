import CBOR
import CTAP2
import PAMSecurityKey
import _SecurityKeyInternals

extension FuzzTarget {
    /// pam-u2f's authorization file as pam_securitykey.so reads it (`AuthorizationFile`): a
    /// user's `~/.config/Yubico/u2f_keys` is written by the user and read by a root process
    /// (sudo, login). The first byte picks the user looked up (bits 0–1: `myuser`, the first
    /// line's name, the last line's name, `root`) and `max_devices` (bits 2–3: 1, 2, 24, no
    /// limit); the rest is the file. A first byte with bit 7 set makes the rest a COSE key, as
    /// a key returns one at enrolment, read into a credential (`PAMCredential(coseKey:)`).
    ///
    /// Properties: a refusal is `PAM_AUTHINFO_UNAVAIL` with a sentence; the same bytes read the
    /// same twice, and the same with CR LF line ends; the credentials found are those of the
    /// last line whose name is the user's very bytes (split at LF and `:` bytes, as pam-u2f
    /// does), at most `max_devices` of them, a prefix of the whole list; each is a valid key;
    /// written back as a line they read the same; a credential added to the file
    /// (`AuthorizationFile.adding`) is read after the user's others.
    static let pamAuthorizationFile = FuzzTarget(
        "pam-authfile", "pam-u2f authorization files (u2f_keys) for a user, and enrolled COSE keys"
    ) {
        bytes throws(FuzzPropertyViolation) in
        guard let selector = bytes.first else { return }
        let text = Array(bytes.dropFirst())
        if selector & 0x80 != 0 {
            try checkEnrolledKey(text)
            return
        }
        let maxDevices = [1, 2, 24, Int.max][Int(selector >> 2 & 3)]
        let lines = pamLines(text)
        let user: String
        switch selector & 3 {
        case 0: user = "myuser"
        case 1: user = String(decoding: pamName(lines.first ?? []), as: UTF8.self)
        case 2: user = String(decoding: pamName(lines.last ?? []), as: UTF8.self)
        default: user = "root"
        }
        let read = readAuthorizationFile(user, text, maxDevices)
        try expect(read == readAuthorizationFile(user, text, maxDevices), "a file read differently twice")
        let crlf = pamCRLF(text)
        if crlf.count <= AuthorizationFile.maximumSize {
            try expect(
                read == readAuthorizationFile(user, crlf, maxDevices),
                "a file read differently with CR LF line ends")
        }
        try expect(
            PAMEnrollment.isValidUser(user)
                == (!user.isEmpty && !user.utf8.contains(UInt8(ascii: ":"))
                    && !user.utf8.contains(UInt8(ascii: "\n"))),
            "isValidUser disagrees with the bytes that end a name and a line")
        let credentials: [PAMCredential]?
        switch read {
        case .failure(let failure):
            try expect(failure.result == .authInfoUnavailable, "a file refused with \(failure.result)")
            try expect(!failure.message.isEmpty, "a refusal without a sentence")
            return
        case .success(let found): credentials = found
        }
        // The user's line by bytes: the last non-empty line whose name is the user's bytes.
        let line = lines.last { !$0.isEmpty && pamName($0).elementsEqual(user.utf8) }
        try expect(
            (credentials == nil) == (line == nil), "the user's line found by a comparison other than bytes")
        guard let credentials, let line else { return }
        let listed = line.count { $0 == UInt8(ascii: ":") }
        try expect(
            credentials.count == min(listed, maxDevices),
            "\(credentials.count) credentials of \(listed) listed")
        guard case .success(let everything) = readAuthorizationFile(user, text, .max), let all = everything
        else {
            throw FuzzPropertyViolation(description: "a file read with a max_devices and not without")
        }
        try expect(
            Array(all.prefix(credentials.count)) == credentials,
            "max_devices did not keep the first credentials")
        for credential in credentials {
            try expect((try? credential.coseKey()) != nil, "a credential read whose key is not valid")
            try expect(credential.credentialID?.isEmpty != true, "an empty credential ID")
            try expect(
                !credential.isOldFormat || credential.attributes == .presence,
                "an old-style credential without presence")
        }
        guard PAMEnrollment.isValidUser(user), !all.isEmpty else { return }
        // Written back in the new style, the credentials read the same.
        let written = AuthorizationFile.line(user: user, credentials: all)
        let again = try? AuthorizationFile.credentials(for: user, in: Array(written.utf8), maxDevices: .max)
        let newStyle = all.map { credential in
            var credential = credential
            credential.isOldFormat = false
            return credential
        }
        try expect(again == newStyle, "the credentials written back read differently")
        // A credential added to the file comes after the user's others.
        var extra = all[all.count - 1]
        extra.isOldFormat = false
        extra.attributes = [.presence, .pin]
        guard let added = try? AuthorizationFile.adding(extra, for: user, to: text) else {
            throw FuzzPropertyViolation(description: "a file that reads was refused for adding")
        }
        guard added.utf8.count <= AuthorizationFile.maximumSize else { return }
        let grown = try? AuthorizationFile.credentials(for: user, in: Array(added.utf8), maxDevices: .max)
        try expect(grown == all + [extra], "a credential added is not read after the user's others")
    }

    /// pam-u2f's `sshformat`: an OpenSSH security-key private key file (`ssh-keygen -t
    /// ecdsa-sk` or `ed25519-sk`) as pam_securitykey.so reads it (`SSHKeyFile`).
    ///
    /// Properties: a refusal is `PAM_AUTHINFO_UNAVAIL` with a sentence; the same bytes read the
    /// same twice, and the same with CR LF line ends; what is read is ES256 or EdDSA with a key
    /// of its size, a key handle, an application and only OpenSSH's presence and verification
    /// flags; written again as a key file (the harness's writer, PROTOCOL.key), it reads the same.
    static let pamSSHKeyFile = FuzzTarget("pam-sshkey", "OpenSSH security-key private key files (sshformat)")
    {
        bytes throws(FuzzPropertyViolation) in
        let read = readSSHKeyFile(bytes)
        try expect(read == readSSHKeyFile(bytes), "a key file read differently twice")
        let crlf = pamCRLF(bytes)
        if crlf.count <= AuthorizationFile.maximumSize {
            try expect(read == readSSHKeyFile(crlf), "a key file read differently with CR LF line ends")
        }
        switch read {
        case .failure(let failure):
            try expect(failure.result == .authInfoUnavailable, "a key file refused with \(failure.result)")
            try expect(!failure.message.isEmpty, "a refusal without a sentence")
        case .success(let key):
            let credential = key.credential
            switch credential.algorithm {
            case .es256:
                try expect(
                    credential.publicKey.count == 64, "an ES256 key of \(credential.publicKey.count) bytes")
            case .edDSA:
                try expect(
                    credential.publicKey.count == 32, "an EdDSA key of \(credential.publicKey.count) bytes")
            default: throw FuzzPropertyViolation(description: "a key file read as \(credential.algorithm)")
            }
            try expect(credential.credentialID?.isEmpty == false, "a key file without a key handle")
            try expect(!key.application.isEmpty, "a key file without an application")
            try expect(
                credential.attributes.isSubset(of: [.presence, .verification]),
                "a key file with the PIN attribute")
            try expect((try? credential.coseKey()) != nil, "a key file read whose key is not valid")
            let rewritten = sshKeyFile(credential, application: key.application)
            try expect(
                readSSHKeyFile(rewritten) == read, "a key file written again reads differently")
        }
    }

    /// The arguments of a `pam_securitykey.so` line (`PAMModuleOptions`), separated by NUL
    /// bytes as PAM hands them over (argv).
    ///
    /// Properties: a refusal is `PAM_SERVICE_ERR` naming the option; the same arguments read
    /// the same twice; every argument of an accepted line is accepted alone, and a refused line
    /// has an argument refused alone; what is accepted keeps its bounds (`max_devices` 1–256,
    /// `timeout` 1–600 s, a debug file with an absolute path, `trace` implying `debug`); the
    /// relying party is `origin`, else `ssh:` with `sshformat`, else `pam://` and the host.
    static let pamModuleOptions = FuzzTarget("pam-options", "pam_securitykey.so's module arguments") {
        bytes throws(FuzzPropertyViolation) in
        let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).prefix(64).map {
            String(decoding: $0, as: UTF8.self)
        }
        let read = readModuleOptions(arguments)
        try expect(read == readModuleOptions(arguments), "arguments read differently twice")
        switch read {
        case .failure(let failure):
            try expect(failure.result == .serviceError, "arguments refused with \(failure.result)")
            try expect(failure.message.contains("PAM option"), "a refusal that does not name the option")
            try expect(
                arguments.contains { (try? PAMModuleOptions(arguments: [$0])) == nil },
                "a line refused whose every argument is accepted alone")
        case .success(let options):
            for argument in arguments {
                try expect(
                    (try? PAMModuleOptions(arguments: [argument])) != nil,
                    "an argument refused alone, accepted in a line")
            }
            try expect(
                (1...PAMModuleOptions.maximumDevices).contains(options.maxDevices),
                "max_devices \(options.maxDevices)")
            try expect(
                options.timeout >= .seconds(1)
                    && options.timeout <= .seconds(PAMModuleOptions.maximumTimeout),
                "a timeout of \(options.timeout)")
            if case .file(let path) = options.debugDestination {
                try expect(path.hasPrefix("/"), "a debug file with a relative path")
            }
            try expect(!options.trace || options.debug, "trace without debug")
            try expect(
                options.relyingPartyID(hostName: "host")
                    == options.origin ?? (options.sshFormat ? "ssh:" : "pam://host"),
                "the relying party is not origin, ssh: or pam://HOST")
            // SECURITYKEY_TRACE matters only with `environment`.
            if !options.honoursEnvironment {
                try expect(
                    (try? PAMModuleOptions.fromLine(arguments)) == options,
                    "fromLine reads the line differently")
            }
        }
    }

    /// A COSE key a key returned at enrolment, read into the credential the file stores:
    /// refused with a sentence, or a valid key that converts as the COSE key does and whose line
    /// reads back the same.
    private static func checkEnrolledKey(_ bytes: [UInt8]) throws(FuzzPropertyViolation) {
        guard let key = try? COSEKey(cbor: bytes) else { return }
        let credential: PAMCredential
        do throws(PAMFailure) {
            credential = try PAMCredential(
                credentialID: [1, 2, 3], coseKey: key, attributes: [.presence, .verification])
        } catch {
            try expect(
                error.result == .authInfoUnavailable && !error.message.isEmpty,
                "a COSE key refused without a sentence")
            return
        }
        let converted = try? credential.coseKey().publicKey().spkiDERRepresentation
        try expect(converted != nil, "a credential made from a COSE key is not a valid key")
        try expect(
            converted == (try? key.publicKey().spkiDERRepresentation), "a credential converts to another key")
        let line = AuthorizationFile.line(user: "u", credentials: [credential])
        try expect(
            (try? AuthorizationFile.credentials(for: "u", in: Array(line.utf8), maxDevices: .max)) == [
                credential
            ],
            "an enrolled credential's line reads differently")
    }

    private static func readAuthorizationFile(_ user: String, _ text: [UInt8], _ maxDevices: Int) -> Result<
        [PAMCredential]?, PAMFailure
    > {
        Result { () throws(PAMFailure) in
            try AuthorizationFile.credentials(for: user, in: text, maxDevices: maxDevices)
        }
    }

    private static func readSSHKeyFile(_ bytes: [UInt8]) -> Result<SSHKeyRead, PAMFailure> {
        Result { () throws(PAMFailure) in
            let (credential, application) = try SSHKeyFile.credential(in: bytes)
            return SSHKeyRead(credential: credential, application: application)
        }
    }

    private static func readModuleOptions(_ arguments: [String]) -> Result<PAMModuleOptions, PAMFailure> {
        Result { () throws(PAMFailure) in try PAMModuleOptions(arguments: arguments) }
    }
}

/// What `SSHKeyFile.credential(in:)` read, comparable.
private struct SSHKeyRead: Equatable {
    var credential: PAMCredential
    var application: String
}

/// The lines of a file, split at LF bytes, a CR before the LF dropped.
private func pamLines(_ text: [UInt8]) -> [ArraySlice<UInt8>] {
    text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
        $0.last == UInt8(ascii: "\r") ? $0.dropLast() : $0
    }
}

/// A line's name: its bytes before the first `:`.
private func pamName(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    line.prefix { $0 != UInt8(ascii: ":") }
}

/// `text` with a CR before every LF that has none.
private func pamCRLF(_ text: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(text.count + text.count / 16)
    for (index, byte) in text.enumerated() {
        if byte == UInt8(ascii: "\n"), index == 0 || text[index - 1] != UInt8(ascii: "\r") {
            out.append(UInt8(ascii: "\r"))
        }
        out.append(byte)
    }
    return out
}

/// An unencrypted OpenSSH private key file (PROTOCOL.key) holding `credential` as a security
/// key (PROTOCOL.u2f): what `ssh-keygen -t ecdsa-sk -N ""` writes, base64 at 70 columns.
private func sshKeyFile(_ credential: PAMCredential, application: String) -> [UInt8] {
    func string(_ bytes: [UInt8]) -> [UInt8] {
        let n = UInt32(bytes.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + bytes
    }
    let key: [UInt8]
    if credential.algorithm == .es256 {
        key =
            string(Array("sk-ecdsa-sha2-nistp256@openssh.com".utf8)) + string(Array("nistp256".utf8))
            + string([0x04] + credential.publicKey)
    } else {
        key = string(Array("sk-ssh-ed25519@openssh.com".utf8)) + string(credential.publicKey)
    }
    let flags: UInt8 =
        (credential.attributes.contains(.presence) ? 0x01 : 0)
        | (credential.attributes.contains(.verification) ? 0x04 : 0)
    let publicKey = key + string(Array(application.utf8))
    var section: [UInt8] =
        [0x12, 0x34, 0x56, 0x78, 0x12, 0x34, 0x56, 0x78] + publicKey + [flags]
        + string(credential.credentialID ?? [])
        + string([]) + string(Array("fuzz".utf8))
    var pad: UInt8 = 1
    while section.count % 8 != 0 {
        section.append(pad)
        pad += 1
    }
    let blob: [UInt8] =
        Array("openssh-key-v1".utf8) + [0] + string(Array("none".utf8)) + string(Array("none".utf8))
        + string([])
        + [0, 0, 0, 1] + string(publicKey) + string(section)
    let body = Array(Base64.encode(blob).utf8)
    var text = Array("-----BEGIN OPENSSH PRIVATE KEY-----\n".utf8)
    var start = 0
    while start < body.count {
        text += body[start..<min(start + 70, body.count)]
        text.append(UInt8(ascii: "\n"))
        start += 70
    }
    return text + Array("-----END OPENSSH PRIVATE KEY-----\n".utf8)
}
