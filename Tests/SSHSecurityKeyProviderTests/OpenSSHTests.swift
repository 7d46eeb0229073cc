import CBOR
import CTAP2
import Crypto
import Foundation
import Testing
import TestProcesses
import WebAuthnVerification

/// Debian's OpenSSH (ssh-keygen, ssh, sshd, ssh-agent, ssh-sk-helper) with the built
/// libsecuritykey-sk.so against virtual keys over CTAPHID/UDP and PC/SC. What is checked comes
/// from OpenSSH: its exit status, the files it writes, what sshd accepts (user presence and
/// `verify-required` are enforced by sshd from the signature's flags), and the key's own PIN
/// retry counter. Each test has its own sshd, keys and directory.
@Suite(.serialized)
struct OpenSSHTests {
    static let ecdsaName = "sk-ecdsa-sha2-nistp256@openssh.com"
    static let ed25519Name = "sk-ssh-ed25519@openssh.com"

    @Test("ssh-keygen -w enrols and ssh logs in through the provider over UDP", arguments: ["ecdsa-sk", "ed25519-sk"])
    func enrolAndLogInOverUDP(type: String) throws {
        let bed = try OpenSSHBed()
        try bed.serveUDP(name: "key")
        let enrolled = try bed.enroll(type, file: "id")
        try #require(enrolled.status == 0, "ssh-keygen: \(enrolled.stderrText)")
        let publicKey = try bed.publicKey("id")
        #expect(publicKey.hasPrefix((type == "ecdsa-sk" ? Self.ecdsaName : Self.ed25519Name) + " "))
        try bed.startSSHD(authorizedKeys: [publicKey])
        let login = try bed.login(with: "id")
        #expect(login.status == 0, "ssh: \(login.stderrText)")
        #expect(login.stdoutText == "logged-in\n")
        #expect(bed.sshdLog.contains("Accepted publickey for root"))
    }

    @Test("no-touch-required: the signature carries no user presence, which sshd accepts only when allowed")
    func noTouchRequired() throws {
        let bed = try OpenSSHBed()
        try bed.serveUDP(name: "key")
        let enrolled = try bed.enroll("ecdsa-sk", file: "id", options: ["no-touch-required"])
        try #require(enrolled.status == 0, "ssh-keygen: \(enrolled.stderrText)")
        let publicKey = try bed.publicKey("id")
        try bed.startSSHD(authorizedKeys: [publicKey])
        let refused = try bed.login(with: "id")
        #expect(refused.status != 0)
        #expect(bed.sshdLog.contains("user presence"), "sshd: \(bed.sshdLog)")
        try bed.startSSHD(authorizedKeys: ["no-touch-required " + publicKey])
        let accepted = try bed.login(with: "id")
        #expect(accepted.status == 0, "ssh: \(accepted.stderrText)")
    }

    @Test("A resident verify-required key with a PIN through SSH_ASKPASS; ssh-keygen -K recovers it")
    func residentVerifyRequired() throws {
        let bed = try OpenSSHBed()
        try bed.serveUDP(name: "key", extra: ["--pin", "1234"])
        try bed.answerPINs(with: "1234")
        let enrolled = try bed.enroll(
            "ed25519-sk", file: "id", options: ["resident", "verify-required", "user=alice", "application=ssh:test"])
        try #require(enrolled.status == 0, "ssh-keygen: \(enrolled.stderrText)")
        // The provider said PIN_REQUIRED once; ssh-keygen asked, and the PIN was enough.
        #expect(bed.pinPrompts.count == 1, "\(bed.pinPrompts)")
        let publicKey = try bed.publicKey("id")

        // sshd demands user verification from the signature's flags.
        try bed.startSSHD(authorizedKeys: ["verify-required " + publicKey])
        let login = try bed.login(with: "id")
        #expect(login.status == 0, "ssh: \(login.stderrText)")
        #expect(bed.pinPrompts.count == 2, "\(bed.pinPrompts)")

        // Recovered from the key: the user in the file name, the same public key, and the
        // verify-required flag (ssh asks for the PIN, and sshd sees user verification).
        let recovered = try bed.downloadResidentKeys(into: "recovered")
        #expect(recovered.status == 0, "ssh-keygen -K: \(recovered.stderrText)")
        let file = "recovered/id_ed25519_sk_rk_test_alice"
        #expect(FileManager.default.fileExists(atPath: bed.path(file)), "\(recovered.stderrText)")
        #expect(OpenSSHBed.keyBlob(try bed.publicKey(file)) == OpenSSHBed.keyBlob(publicKey))
        let prompts = bed.pinPrompts.count
        let again = try bed.login(with: file)
        #expect(again.status == 0, "ssh: \(again.stderrText)")
        #expect(bed.pinPrompts.count == prompts + 1, "\(bed.pinPrompts)")
    }

    @Test("A second resident key for the same application and user is refused (CREDENTIAL_EXISTS); another user's is not")
    func residentKeyExists() throws {
        let bed = try OpenSSHBed()
        try bed.serveUDP(name: "key", extra: ["--pin", "1234"])
        try bed.answerPINs(with: "1234")
        let first = try bed.enroll("ecdsa-sk", file: "first", options: ["resident", "user=bob"])
        try #require(first.status == 0, "ssh-keygen: \(first.stderrText)")
        let second = try bed.enroll("ecdsa-sk", file: "second", options: ["resident", "user=bob"])
        #expect(second.status != 0)
        // OpenSSH 9.2 turns SSH_SK_ERR_CREDENTIAL_EXISTS into SSH_ERR_KEY_BAD_PERMISSIONS.
        #expect(second.stderrText.contains("bad permissions"), "ssh-keygen: \(second.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: bed.path("second.pub")))
        let other = try bed.enroll("ecdsa-sk", file: "other", options: ["resident", "user=eve"])
        #expect(other.status == 0, "ssh-keygen: \(other.stderrText)")
    }

    @Test("ssh-agent -P allows the provider; ssh-add -S loads the key; ssh logs in through the agent")
    func agent() throws {
        let bed = try OpenSSHBed()
        try bed.serveUDP(name: "key")
        let enrolled = try bed.enroll("ed25519-sk", file: "id")
        try #require(enrolled.status == 0, "ssh-keygen: \(enrolled.stderrText)")
        try bed.startSSHD(authorizedKeys: [try bed.publicKey("id")])
        try bed.startAgent()
        let added = try bed.openSSH("ssh-add", ["-S", OpenSSHBed.provider, bed.path("id")])
        try #require(added.status == 0, "ssh-add: \(added.stderrText)")
        let listed = try bed.openSSH("ssh-add", ["-L"])
        #expect(OpenSSHBed.keyBlob(listed.stdoutText) == OpenSSHBed.keyBlob(try bed.publicKey("id")))
        let login = try bed.login(options: ["IdentitiesOnly=no"])
        #expect(login.status == 0, "ssh: \(login.stderrText)")
        #expect(login.stdoutText == "logged-in\n")
    }

    @Test("ssh-keygen -O write-attestation writes an attestation WebAuthnVerification verifies", arguments: [
        "ecdsa-sk", "ed25519-sk",
    ])
    func writeAttestation(type: String) throws {
        let bed = try OpenSSHBed()
        try bed.serveUDP(name: "key")
        let challenge = (0..<32).map { _ in UInt8.random(in: 0...255) }
        try Data(challenge).write(to: URL(fileURLWithPath: bed.path("challenge")))
        let enrolled = try bed.enroll(
            type, file: "id", options: ["challenge=\(bed.path("challenge"))", "write-attestation=\(bed.path("att"))"])
        try #require(enrolled.status == 0, "ssh-keygen: \(enrolled.stderrText)")

        // OpenSSH's layout (PROTOCOL.u2f): "ssh-sk-attest-v01", certificate, signature,
        // authenticator data (a CBOR byte string), reserved flags, reserved string.
        var file = SSHWire(Array(try Data(contentsOf: URL(fileURLWithPath: bed.path("att")))))
        #expect(try file.string() == Array("ssh-sk-attest-v01".utf8))
        let certificate = try file.string(), signature = try file.string(), cborAuthData = try file.string()
        #expect(try file.uint32() == 0)
        #expect(try file.string().isEmpty)
        #expect(file.isAtEnd)
        guard case .byteString(let authDataBytes) = try CBORDecoder().decode(cborAuthData) else {
            Issue.record("the authenticator data is not a CBOR byte string")
            return
        }
        let authData = try AuthenticatorData(bytes: authDataBytes)
        #expect(authData.rpIDHash == Array(SHA256.hash(data: Array("ssh:".utf8))))
        // The statement's alg is the attestation key's (the virtual key attests with P-256,
        // ES256, whatever the credential's algorithm); OpenSSH's file does not carry it.
        let object = AttestationObject(
            format: .packed, authData: authData,
            attestationStatement: ["alg": .int(-7), "sig": .byteString(signature), "x5c": [.byteString(certificate)]])
        let verified = try object.verify(clientDataHash: Array(SHA256.hash(data: challenge)))
        #expect(verified.type == .basic)

        // The attested credential is the key in id.pub: its public key and (ECDSA) the point.
        let credential = try #require(authData.attestedCredentialData)
        var blob = SSHWire(Array(try #require(Data(base64Encoded: String(try bed.publicKey("id").split(separator: " ")[1])))))
        _ = try blob.string()
        let sshKey: [UInt8]
        switch try credential.credentialPublicKey.publicKey() {
        case .p256(let key):
            #expect(try blob.string() == Array("nistp256".utf8))
            sshKey = Array(key.x963Representation)
        case .ed25519(let key): sshKey = Array(key.rawRepresentation)
        default:
            Issue.record("unexpected key type")
            return
        }
        #expect(try blob.string() == sshKey)
        #expect(try blob.string() == Array("ssh:".utf8))
    }

    @Test("A wrong PIN fails once with the attempts left and spends exactly one attempt")
    func wrongPIN() throws {
        let bed = try OpenSSHBed()
        let device = try bed.serveUDP(name: "key", extra: ["--pin", "1234"])
        try bed.answerPINs(with: "1234")
        let enrolled = try bed.enroll("ecdsa-sk", file: "id", options: ["resident", "user=carol"])
        try #require(enrolled.status == 0, "ssh-keygen: \(enrolled.stderrText)")
        let before = try #require(try bed.pinRetries(device))

        try bed.answerPINs(with: "9999")
        let prompts = bed.pinPrompts.count
        let recovered = try bed.downloadResidentKeys(into: "recovered")
        #expect(recovered.status != 0)
        #expect(recovered.stderrText.contains("Wrong PIN"), "ssh-keygen -K: \(recovered.stderrText)")
        #expect(recovered.stderrText.contains("\(before - 1) attempts left"), "ssh-keygen -K: \(recovered.stderrText)")
        #expect(bed.pinPrompts.count == prompts + 1, "\(bed.pinPrompts)")
        #expect(try bed.pinRetries(device) == before - 1)
    }

    @Test("No key present: enrolment and signing fail at once with one clear line")
    func noKeyPresent() throws {
        let bed = try OpenSSHBed()
        try bed.serveUDP(name: "key")
        let enrolled = try bed.enroll("ecdsa-sk", file: "id")
        try #require(enrolled.status == 0, "ssh-keygen: \(enrolled.stderrText)")
        try bed.startSSHD(authorizedKeys: [try bed.publicKey("id")])
        bed.stopServing("key")

        let enrolment = try bed.enroll("ed25519-sk", file: "other")
        #expect(enrolment.status != 0)
        #expect(enrolment.stderrText.contains("securitykey-sk: No security key found"), "\(enrolment.stderrText)")
        let login = try bed.login(with: "id")
        #expect(login.status != 0)
        #expect(login.stderrText.contains("securitykey-sk: No security key found"), "\(login.stderrText)")
    }

    @Test("A key file whose credential the key present does not hold is refused")
    func foreignKeyHandle() throws {
        let bed = try OpenSSHBed()
        try bed.serveUDP(name: "first")
        let enrolled = try bed.enroll("ed25519-sk", file: "id")
        try #require(enrolled.status == 0, "ssh-keygen: \(enrolled.stderrText)")
        try bed.startSSHD(authorizedKeys: [try bed.publicKey("id")])
        bed.stopServing("first")
        bed.environment["SECURITYKEY_UDP"] = nil
        try bed.serveUDP(name: "second")
        let login = try bed.login(with: "id")
        #expect(login.status != 0)
        #expect(login.stderrText.contains("does not hold this SSH key"), "\(login.stderrText)")
        #expect(!bed.sshdLog.contains("Accepted publickey"))
    }

    @Test("Two keys: enrolment on each, and on the one touched; signing finds the key holding the handle")
    func twoKeys() throws {
        let bed = try OpenSSHBed()
        let first = try bed.serveUDP(name: "first")
        let second = try bed.serveUDP(name: "second")
        for (file, options) in [("a", ["device=\(first)"]), ("b", ["device=\(second)"]), ("touched", [])] {
            let enrolled = try bed.enroll("ecdsa-sk", file: file, options: options)
            try #require(enrolled.status == 0, "ssh-keygen \(file): \(enrolled.stderrText)")
        }
        try bed.startSSHD(authorizedKeys: try ["a", "b", "touched"].map(bed.publicKey))
        for file in ["b", "a", "touched"] {
            let login = try bed.login(with: file)
            #expect(login.status == 0, "ssh with \(file): \(login.stderrText)")
        }
    }

    @Test("Over PC/SC (vpcd): enrol, log in, and recover a resident key")
    func overPCSC() throws {
        let bed = try OpenSSHBed()
        let device = try bed.servePCSC(extra: ["--pin", "1234"])
        try bed.answerPINs(with: "1234")
        let plain = try bed.enroll("ecdsa-sk", file: "plain")
        try #require(plain.status == 0, "ssh-keygen: \(plain.stderrText)")
        let resident = try bed.enroll("ed25519-sk", file: "resident", options: ["resident", "user=dave", "device=\(device)"])
        try #require(resident.status == 0, "ssh-keygen: \(resident.stderrText)")
        try bed.startSSHD(authorizedKeys: try ["plain", "resident"].map(bed.publicKey))
        for file in ["plain", "resident"] {
            let login = try bed.login(with: file)
            #expect(login.status == 0, "ssh with \(file): \(login.stderrText)")
        }
        let recovered = try bed.downloadResidentKeys(into: "recovered")
        #expect(recovered.status == 0, "ssh-keygen -K: \(recovered.stderrText)")
        let file = "recovered/id_ed25519_sk_rk_dave"
        #expect(OpenSSHBed.keyBlob(try bed.publicKey(file)) == OpenSSHBed.keyBlob(try bed.publicKey("resident")))
    }
}

/// OpenSSH's wire encoding (RFC 4251 §5): big-endian uint32 and length-prefixed strings.
struct SSHWire {
    private var bytes: ArraySlice<UInt8>
    init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    var isAtEnd: Bool { bytes.isEmpty }

    mutating func uint32() throws -> UInt32 {
        guard bytes.count >= 4 else { throw BedError("truncated uint32") }
        let value = bytes.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        bytes = bytes.dropFirst(4)
        return value
    }

    mutating func string() throws -> [UInt8] {
        let length = Int(try uint32())
        guard bytes.count >= length else { throw BedError("truncated string") }
        defer { bytes = bytes.dropFirst(length) }
        return Array(bytes.prefix(length))
    }
}
