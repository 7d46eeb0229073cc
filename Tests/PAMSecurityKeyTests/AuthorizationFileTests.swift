import Foundation
import CBOR
import CTAP2
import Crypto
import PAMSecurityKey
import Testing
import _SecurityKeyInternals

/// pam-u2f's own credential files (Yubico/pam-u2f, tests/credentials/, BSD-2-Clause), read
/// as pam-u2f reads them, and lines this module must refuse.
struct AuthorizationFileTests {
    /// tests/credentials/old_credential: an old-style (U2F) line.
    static let oldCredential =
        "myuser:mGvXxDqTMSVkSlDnDRNTVsP5Ij9cceCkdZkSJYeaJCHCOpBtMIFGQXKBBkvZpV5bWuEuJkoElIiMKirhCPAU8Q,0405a35641a6f5b63e2ef4449393e7e1cb2b96711e797fc74dbd63e99dbf410ffe7425e79f8c41d8f049c8f7241a803563a43c139f923f0ab9007fbd0dcc722927\n"
    /// tests/credentials/new_double_-V: two credentials, +presence+verification.
    static let newDoubleV =
        "myuser:oBQ1hIWiYfhJ8g6DFWawe0xOAlKtcPiBDKyoS8ydd/zwXbIEU+fHfnzjh46gLjV67+rt1ycCTTMj+P/7EsLNhg==,exBDguUdnZhG4+sXOnKPJtrMvn+Rb7pn2E52wyEieitaLY3Yhb2mSFth5sxNjuwl7/n+0mMN6gQtmzVxCNvTXw==,es256,+presence+verification:/8NBWj19H4Wr+/avzu9Qg5PGwE7fmdrFWGqlNega38eV1nnajviBOS6AbaHmQwqsmVcE+DPNrP7KDFI3ZqjPew==,+sW8XEp5RJe/ZyPykO6AP2Wm5ySTuLshZ13ohwl0VsypepsyhJxfPmEQGIXysn47uK5egh4eWMvNyMA4Ww0fPg==,es256,+presence+verification"
    /// tests/credentials/new_double_-P: two credentials without presence (empty attributes).
    static let newDoubleP =
        "myuser:ACoC1fhEYhdOstzkaCb1PqcU4T6xMrXxe5GEQjPDsheOxJzWGXTpaA3abmHZ3khcJ8Off/ecyPq2kMMqh3l7Xg==,c79BTe8BahuDUaeBAATyT8NKq+mwV87aaor4s79WI5g9gn7BQDjnyUd1C7aaQMGGtu88h/YOGvDVKMVDal6OJQ==,es256,:0BdgF8gbsYuFfUrpI3K01LcEwnWBxZ6Ewj61GXZJPQh3IcK4H+QMMG6nqzBhfLipVwGqUugZxCZP2eR9151kog==,X0vskPE+AKWmGrp3ZGhUJVXeAm+sN6nCbMeC30IpItVhMdSosP9I0jOMmsQeF+rKh+00K30iNucHdXguLPYL7g==,es256,"
    /// tests/credentials/new_-r-P-V-N: a resident credential (`*`) with +verification+pin.
    static let newResident =
        "myuser:*,oO3z71rtDS86RH3EdZFxr/y6ZUOZ7/csyhia9UhiDWWpq7oUoxqvN0qmky9R14Clm6RovaOThX89oIbI84BqxA==,es256,+verification+pin"

    static func parse(_ text: String, user: String = "myuser", max: Int = 24) throws -> [PAMCredential]? {
        try AuthorizationFile.credentials(for: user, in: Array(text.utf8), maxDevices: max)
    }

    @Test func oldStyleLine() throws {
        let credentials = try #require(try Self.parse(Self.oldCredential))
        #expect(credentials.count == 1)
        let credential = try #require(credentials.first)
        #expect(credential.isOldFormat)
        #expect(credential.algorithm == .es256)
        #expect(credential.attributes == .presence)
        // A U2F key handle of this key is 64 bytes; the point is the 65-byte uncompressed form.
        #expect(credential.credentialID?.count == 64)
        #expect(credential.publicKey.prefix(3) == [0x04, 0x05, 0xa3])
        _ = try credential.coseKey()
    }

    @Test func twoNewStyleCredentials() throws {
        let credentials = try #require(try Self.parse(Self.newDoubleV))
        #expect(credentials.count == 2)
        for credential in credentials {
            #expect(!credential.isOldFormat)
            #expect(credential.attributes == [.presence, .verification])
            #expect(credential.credentialID?.count == 64)
            #expect(credential.publicKey.count == 64)
        }
        #expect(credentials.map(\.credentialID) != [credentials[0].credentialID, credentials[0].credentialID])
        // max_devices keeps the first ones.
        #expect(try Self.parse(Self.newDoubleV, max: 1)?.count == 1)
    }

    @Test func emptyAttributesAndResident() throws {
        let withoutPresence = try #require(try Self.parse(Self.newDoubleP))
        #expect(withoutPresence.map(\.attributes) == [[], []])
        let resident = try #require(try Self.parse(Self.newResident)?.first)
        #expect(resident.credentialID == nil)
        #expect(resident.attributes == [.verification, .pin])
        // Written back, the line is pam-u2f's own.
        #expect(AuthorizationFile.line(user: "myuser", credentials: [resident]) == Self.newResident)
    }

    @Test func otherUsersAndTheLastLine() throws {
        let text = "alice:" + Self.newResident.split(separator: ":", maxSplits: 1)[1] + "\n" + Self.newDoubleV + "\n"
            + Self.oldCredential
        #expect(try Self.parse(text, user: "bob") == nil)
        #expect(try Self.parse(text, user: "alice")?.count == 1)
        // pam-u2f takes a user's last line.
        #expect(try Self.parse(text)?.first?.isOldFormat == true)
    }

    @Test(arguments: [
        "myuser",  // no credential
        ":abc,def,es256,+presence",  // no user
        "myuser:AAAA,AAAA,es256,+presence",  // a public key of 3 bytes
        "myuser:AAAA",  // one field
        "myuser:AAAA,AAAA,AAAA",  // three fields
        "myuser:*,oO3z71rtDS86RH3EdZFxr/y6ZUOZ7/csyhia9UhiDWWpq7oUoxqvN0qmky9R14Clm6RovaOThX89oIbI84BqxA==,es384,+presence",
        "myuser:*,oO3z71rtDS86RH3EdZFxr/y6ZUOZ7/csyhia9UhiDWWpq7oUoxqvN0qmky9R14Clm6RovaOThX89oIbI84BqxA==,es256,+presence+always",
        "myuser:*,oO3z71rtDS86RH3EdZFxr/y6ZUOZ7/csyhia9UhiDWWpq7oUoxqvN0qmky9R14Clm6RovaOThX89oIbI84BqxA==,es256,presence",
        // A point not on the curve (the last byte of a valid one changed).
        "myuser:*,oO3z71rtDS86RH3EdZFxr/y6ZUOZ7/csyhia9UhiDWWpq7oUoxqvN0qmky9R14Clm6RovaOThX89oIbI84BqxQ==,es256,+presence",
        "myuser:not base64!,oO3z71rtDS86RH3EdZFxr/y6ZUOZ7/csyhia9UhiDWWpq7oUoxqvN0qmky9R14Clm6RovaOThX89oIbI84BqxA==,es256,",
    ])
    func malformedLinesRefuseTheFile(_ line: String) {
        // Even when the malformed line is another user's.
        let text = Self.newDoubleV.replacingOccurrences(of: "myuser:", with: "other:") + "\n" + line + "\n"
        #expect(throws: PAMFailure.self) { try Self.parse(text, user: "other") }
    }

    /// Lines end at LF bytes with a CR before them dropped (a property of the pam-authfile fuzz
    /// target): split as Swift Characters, CR LF is one grapheme that is not "\n", and a file
    /// written on Windows was one long line, refused.
    @Test func crlfLineEnds() throws {
        let text = "alice:" + Self.newResident.split(separator: ":", maxSplits: 1)[1] + "\r\n" + Self.newDoubleV + "\r\n"
        #expect(try Self.parse(text)?.count == 2)
        #expect(try Self.parse(text, user: "alice")?.first?.attributes == [.verification, .pin])
        let extra = try #require(try Self.parse(Self.newResident)?.first)
        let added = try AuthorizationFile.adding(extra, for: "alice", to: Array(text.utf8))
        #expect(try Self.parse(added, user: "alice")?.count == 2)
        #expect(try Self.parse(added)?.count == 2)
    }

    /// A user's line is the one whose name is the user's very bytes, as pam-u2f compares them
    /// (strcmp), not a name Swift's `==` takes for equal (canonically equivalent).
    @Test func namesCompareAsBytes() throws {
        let (one, two) = (Self.newResident.split(separator: ":", maxSplits: 1)[1], Self.newDoubleV.split(separator: ":", maxSplits: 1)[1])
        let text = "jos\u{e9}:\(one)\njose\u{301}:\(two)\n\u{212A}im:\(two)\n"
        #expect(try Self.parse(text, user: "jos\u{e9}")?.count == 1)
        #expect(try Self.parse(text, user: "jose\u{301}")?.count == 2)
        #expect(try Self.parse(text, user: "Kim") == nil)
        // A separator followed by a combining mark is still a separator.
        #expect(throws: PAMFailure.self) { try Self.parse("myuser:\u{301}\(one)\n") }
        #expect(!PAMEnrollment.isValidUser("my\r\nuser"))
        #expect(!PAMEnrollment.isValidUser("my:\u{301}user"))
    }

    /// A key's COSE key on another curve than its algorithm's is not read as a P-256 or
    /// Ed25519 key (a property of the pam-authfile fuzz target: it converts to the same key).
    @Test func enrolledKeyOnAnotherCurveRefused() throws {
        let p256 = P256.Signing.PrivateKey().publicKey.rawRepresentation
        let ed25519 = Curve25519.Signing.PrivateKey().publicKey.rawRepresentation
        let keys: [CBORMap] = [
            [
                COSEKey.Label.keyType: .int(2), COSEKey.Label.algorithm: .int(-7), COSEKey.Label.curve: .int(2),
                COSEKey.Label.x: .byteString(Array(p256.prefix(32))), COSEKey.Label.y: .byteString(Array(p256.suffix(32))),
            ],
            [
                COSEKey.Label.keyType: .int(1), COSEKey.Label.algorithm: .int(-8), COSEKey.Label.curve: .int(4),
                COSEKey.Label.x: .byteString(Array(ed25519)),
            ],
        ]
        for map in keys {
            #expect(throws: PAMFailure.self) {
                try PAMCredential(credentialID: [1], coseKey: try COSEKey(map: map), attributes: [.presence])
            }
        }
    }

    @Test func notUTF8Refused() {
        #expect(throws: PAMFailure.self) {
            try AuthorizationFile.credentials(for: "myuser", in: [0x6d, 0x3a, 0xff, 0xfe], maxDevices: 24)
        }
    }

    /// Every COSE type pam-u2f writes, from keys swift-crypto made, through a line and back.
    @Test func eachTypeRoundTrips() throws {
        let p256 = P256.Signing.PrivateKey().publicKey
        let ed25519 = Curve25519.Signing.PrivateKey().publicKey
        let keys: [CBORMap] = [
            [
                COSEKey.Label.keyType: .int(2), COSEKey.Label.algorithm: .int(-7), COSEKey.Label.curve: .int(1),
                COSEKey.Label.x: .byteString(Array(p256.rawRepresentation.prefix(32))),
                COSEKey.Label.y: .byteString(Array(p256.rawRepresentation.suffix(32))),
            ],
            [
                COSEKey.Label.keyType: .int(1), COSEKey.Label.algorithm: .int(-8), COSEKey.Label.curve: .int(6),
                COSEKey.Label.x: .byteString(Array(ed25519.rawRepresentation)),
            ],
        ]
        for map in keys {
            let cose = try COSEKey(map: map)
            let credential = try PAMCredential(credentialID: SystemRandom.bytes(48), coseKey: cose, attributes: [.presence, .pin])
            let line = AuthorizationFile.line(user: "u", credentials: [credential])
            let parsed = try #require(try Self.parse(line, user: "u")?.first)
            #expect(parsed == credential)
            #expect(try parsed.coseKey().parameters.sorted { "\($0.key)" < "\($1.key)" } == cose.parameters.sorted { "\($0.key)" < "\($1.key)" })
        }
    }

    @Test func addingKeepsOtherLinesAndExtendsTheUsers() throws {
        let extra = try #require(try Self.parse(Self.newResident)?.first)
        let text = "alice:" + Self.newDoubleP.split(separator: ":", maxSplits: 1)[1] + "\n" + Self.newDoubleV + "\n"
        let added = try AuthorizationFile.adding(extra, for: "myuser", to: Array(text.utf8))
        #expect(try Self.parse(added)?.count == 3)
        #expect(try Self.parse(added, user: "alice")?.count == 2)
        let fresh = try AuthorizationFile.adding(extra, for: "carol", to: Array(text.utf8))
        #expect(try Self.parse(fresh, user: "carol") == [extra])
        #expect(throws: PAMFailure.self) { try AuthorizationFile.adding(extra, for: "x", to: Array("broken\n".utf8)) }
    }

    /// `pam enroll --append`: a new file gets pamu2fcfg's line; an existing one keeps its
    /// lines and the user's line gains the credential; nothing is written when the file is not
    /// one to change or the confirmation throws.
    @Test func appendingToAFile() throws {
        struct Declined: Error {}
        let extra = try #require(try Self.parse(Self.newResident)?.first)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pam-append-\(getpid())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("Yubico/u2f_keys").path
        #expect(throws: Declined.self) {
            try AuthorizationFile.append(extra, for: "myuser", at: path) { throw Declined() }
        }
        #expect(!FileManager.default.fileExists(atPath: path))
        try AuthorizationFile.append(extra, for: "myuser", at: path) {}
        #expect(try Self.parse(String(contentsOfFile: path, encoding: .utf8)) == [extra])
        try Self.newDoubleV.write(toFile: path, atomically: true, encoding: .utf8)
        try AuthorizationFile.append(extra, for: "myuser", at: path) {}
        let grown = try String(contentsOfFile: path, encoding: .utf8)
        #expect(grown.hasPrefix(Self.newDoubleV + ":*,oO3z71rtDS86RH3EdZFxr"))
        #expect(try Self.parse(grown)?.count == 3)
        try "broken\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: PAMFailure.self) { try AuthorizationFile.append(extra, for: "myuser", at: path) {} }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "broken\n")
    }

    /// What may name a user in the file, and pam-u2f's type names (pamu2fcfg's `-t`).
    @Test func userNamesAndTypeNames() {
        #expect(PAMEnrollment.isValidUser("myuser"))
        for bad in ["", "my:user", "my\nuser"] { #expect(!PAMEnrollment.isValidUser(bad)) }
        #expect(PAMEnrollment.algorithm(typeName: "es256")?.rawValue == -7)
        #expect(PAMEnrollment.algorithm(typeName: "eddsa")?.rawValue == -8)
        #expect(PAMEnrollment.algorithm(typeName: "rs256")?.rawValue == -257)
        #expect(PAMEnrollment.algorithm(typeName: "es384") == nil)
    }

    /// A user the system does not know gets the default file in this process's home.
    @Test func defaultPathOfAnUnknownUser() {
        #expect(
            AuthorizationFile.defaultPath(for: "no-such-user-\(getpid())")
                == FileManager.default.homeDirectoryForCurrentUser.path + "/.config/Yubico/u2f_keys")
    }
}

/// The PAM line's options, with pam_u2f(8)'s meanings.
struct ModuleOptionsTests {
    @Test func pamU2FOptions() throws {
        let options = try PAMModuleOptions(arguments: [
            "debug", "debug_file=syslog", "origin=pam://host", "appid=pam://host", "authfile=/etc/u2f_mappings",
            "nouserok", "cue", "cue_prompt=Touch it", "interactive", "userpresence=0", "userverification=1",
            "pinverification=2", "max_devices=3", "nodetect", "authpending_file=", "openasuser",
        ])
        #expect(options.debug && options.noUserOK && options.cue && options.interactive && options.noDetect)
        #expect(options.debugDestination == .syslog)
        #expect(options.relyingPartyID(hostName: "other") == "pam://host")
        #expect(options.authFile == "/etc/u2f_mappings")
        #expect(options.cuePrompt == "Touch it")
        #expect(options.userPresence == .discouraged)
        #expect(options.userVerification == .required)
        #expect(options.pinVerification == .keyDefault)
        #expect(options.maxDevices == 3)
        #expect(options.authPendingFile == "")
        #expect(try PAMModuleOptions(arguments: []).relyingPartyID(hostName: "box") == "pam://box")
        #expect(try PAMModuleOptions(arguments: ["sshformat"]).relyingPartyID(hostName: "box") == "ssh:")
    }

    @Test(arguments: ["manual", "alwaysok", "frobnicate", "timeout=0", "timeout=soon", "debug_file=relative", "origin="])
    func refusedOptions(_ argument: String) {
        #expect(throws: PAMFailure(.serviceError, "")) { try PAMModuleOptions(arguments: ["debug", argument]) }
    }
}
