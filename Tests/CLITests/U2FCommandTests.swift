import Foundation
import Testing

/// A key that speaks only CTAP1/U2F (`virtual serve --ctap1-only`) used through the ordinary
/// commands, over CTAPHID/UDP and over PC/SC: the registration's fido-u2f attestation is checked
/// by python-fido2's FidoU2FAttestation and by `verify`, the assertion by cryptography.
@Suite(.serialized) struct U2FCommandTests {
    static let challenge = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
    static let challengeHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

    @Test func u2fOnlyKeyOverUDP() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("u2f-udp-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = directory.appendingPathComponent("root.pem")
        let served = try CLIRunner.withVirtualKey([
            "--udp", "127.0.0.1:\(port)", "--ctap1-only", "--attestation-root", root.path,
        ]) {
            var listed: [String: Any] = [:]
            for _ in 0..<50 {
                if let keys = try? CLIRunner.run(["list", "--udp", device, "--json"]).json() as? [[String: Any]],
                    let key = keys.first, key["versions"] is [String]
                {
                    listed = key
                    break
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            #expect(listed["versions"] as? [String] == ["U2F_V2"])
            #expect(listed["u2fOnly"] as? Bool == true)
            try Self.ceremonies(
                python: python, root: root.path, directory: directory,
                run: { try CLIRunner.run($0) }, device: device)
        }
        #expect(served.status == 0)
    }

    @Test func u2fOnlyKeyOverPCSC() throws {
        guard let python = PythonFido2.interpreter() else { return }
        try PCSCBed.with { bed in
            try bed.serve(["--ctap1-only", "--attestation-root", bed.path("root.pem")])
            let info = try bed.run(["info", "--device", bed.device, "--json"])
            try #require(info.status == 0, "\(info.stderr)")
            #expect(try info.object()["u2fOnly"] as? Bool == true)
            try Self.ceremonies(
                python: python, root: bed.path("root.pem"), directory: URL(fileURLWithPath: bed.path(".")),
                run: { try bed.run($0) }, device: bed.device)
        }
    }

    /// Register, check with python-fido2 and `verify`, authenticate, the exclude list, and the
    /// requests a U2F key cannot serve.
    static func ceremonies(
        python: String, root: String, directory: URL, run: ([String]) throws -> CLIRunner.Result, device: String
    ) throws {
        let register = try run([
            "register", "--device", device, "--rp", "example.org", "--user", "alice", "--challenge",
            challenge, "--json",
        ])
        try #require(register.status == 0, "\(register.stderr)")
        let registration = try register.object()
        #expect(registration["attestationFormat"] as? String == "fido-u2f")
        let checked = try PythonFido2.runScript(python, "check_registration.py", [root], input: register.stdout)
        #expect(checked["fmt"] as? String == "fido-u2f")
        #expect(checked["attestationType"] as? String == "BASIC")
        #expect(checked["chainedToRoot"] as? Bool == true)
        #expect(checked["aaguid"] as? String == "00000000-0000-0000-0000-000000000000")
        #expect(checked["challenge"] as? String == challengeHex)
        #expect(checked["userVerified"] as? Bool == false)

        let id = try #require(registration["id"] as? String)
        let spki = try #require((registration["response"] as? [String: Any])?["publicKey"] as? String)
        let authenticate = try run([
            "authenticate", "--device", device, "--rp", "example.org", "--credential", id, "--challenge",
            challenge, "--json",
        ])
        try #require(authenticate.status == 0, "\(authenticate.stderr)")
        let signed = try PythonFido2.runScript(python, "check_assertion.py", [spki], input: authenticate.stdout)
        #expect(signed["verified"] as? Bool == true)
        #expect(signed["userPresent"] as? Bool == true)
        #expect(signed["challenge"] as? String == challengeHex)

        // Our own relying-party check accepts the fido-u2f attestation and the assertion.
        let registrationFile = directory.appendingPathComponent("u2f-reg.json")
        let assertionFile = directory.appendingPathComponent("u2f-auth.json")
        try Data(register.stdout.utf8).write(to: registrationFile)
        try Data(authenticate.stdout.utf8).write(to: assertionFile)
        let verify = try run([
            "verify", "--registration", registrationFile.path, "--assertion", assertionFile.path, "--trust-root", root,
            "--json",
        ])
        #expect(verify.status == 0, "\(verify.stderr)")
        let verified = try verify.object()
        #expect(verified["verified"] as? Bool == true)
        let verifiedRegistration = verified["registration"] as? [String: Any]
        #expect(verifiedRegistration?["format"] as? String == "fido-u2f")
        #expect(verifiedRegistration?["trustRootVerified"] as? Bool == true)

        // The exclude list is pre-flighted with check-only: the key is already registered.
        let again = try run([
            "register", "--device", device, "--rp", "example.org", "--user", "alice", "--exclude", id, "--json",
        ])
        #expect(again.status != 0)
        #expect((try? again.object()["error"] as? [String: Any])??["code"] as? String == "credential-excluded")
        // The same credential under another RP is not this key's: no-credentials.
        let elsewhere = try run([
            "authenticate", "--device", device, "--rp", "example.com", "--credential", id, "--json",
        ])
        #expect((try? elsewhere.object()["error"] as? [String: Any])??["code"] as? String == "no-credentials")
        // U2F cannot verify users nor store discoverable credentials: clear refusals.
        let verifyUser = try run([
            "register", "--device", device, "--rp", "example.org", "--user", "alice", "--uv", "--json",
        ])
        #expect(verifyUser.status != 0)
        #expect(verifyUser.stderr.contains("cannot verify users"))
        let resident = try run([
            "register", "--device", device, "--rp", "example.org", "--user", "alice", "--resident", "--json",
        ])
        #expect(resident.status != 0)
        #expect(resident.stderr.contains("discoverable"))
    }
}
