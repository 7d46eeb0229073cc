import Foundation
import Testing

/// Every device command, run as the built binary against `securitykey virtual serve --pcsc`
/// in a private PC/SC bed, checked against python-fido2 and cryptography where they can say.
@Suite(.serialized) struct PCSCCommandTests {
    static let aaguid = "6b1a2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    /// base64url of 32 bytes 0x00..0x1f, and those bytes in hex.
    static let challenge = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
    static let challengeHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

    @Test func registerAuthenticateVerify() throws {
        guard let python = PythonFido2.interpreter() else { return }
        try PCSCBed.with { bed in
            try bed.serve(["--state", bed.path("state"), "--attestation-root", bed.path("root.pem")])
            let register = try bed.run([
                "register", "--device", bed.device, "--rp", "example.org", "--user", "alice", "--challenge",
                Self.challenge, "--json",
            ])
            try #require(register.status == 0, "\(register.stderr)")
            let registration = try register.object()
            #expect(registration["type"] as? String == "public-key")
            #expect(registration["id"] as? String == registration["rawId"] as? String)
            let response = try #require(registration["response"] as? [String: Any])
            #expect(response["transports"] as? [String] == ["nfc", "usb"])
            #expect(response["authenticatorData"] is String)
            #expect(
                (registration["publicKeyPEM"] as? String)?.hasPrefix("-----BEGIN PUBLIC KEY-----") == true)
            #expect(registration["clientExtensionResults"] as? [String: Any] != nil)

            let checked = try PythonFido2.runScript(
                python, "check_registration.py", [bed.path("root.pem")], input: register.stdout)
            #expect(checked["fmt"] as? String == "packed")
            #expect(checked["attestationType"] as? String == "BASIC")
            #expect(checked["chainedToRoot"] as? Bool == true)
            #expect(checked["type"] as? String == "webauthn.create")
            #expect(checked["challenge"] as? String == Self.challengeHex)
            #expect(checked["origin"] as? String == "https://example.org")

            let id = try #require(registration["id"] as? String)
            let authenticate = try bed.run([
                "authenticate", "--device", bed.device, "--rp", "example.org", "--credential", id,
                "--challenge",
                Self.challenge, "--json",
            ])
            try #require(authenticate.status == 0, "\(authenticate.stderr)")
            let assertion = try authenticate.object()
            #expect(assertion["id"] as? String == id)
            let spki = try #require(response["publicKey"] as? String)
            let signed = try PythonFido2.runScript(
                python, "check_assertion.py", [spki], input: authenticate.stdout)
            #expect(signed["verified"] as? Bool == true)
            #expect(signed["type"] as? String == "webauthn.get")
            #expect(signed["challenge"] as? String == Self.challengeHex)
            #expect(signed["userPresent"] as? Bool == true)
            #expect(signed["signCount"] as? Int == assertion["signCount"] as? Int)

            // verify, as a relying party: both files, the root, the expected challenge.
            try Data(register.stdout.utf8).write(to: URL(fileURLWithPath: bed.path("reg.json")))
            try Data(authenticate.stdout.utf8).write(to: URL(fileURLWithPath: bed.path("auth.json")))
            let verify = try bed.run([
                "verify", "--registration", bed.path("reg.json"), "--assertion", bed.path("auth.json"),
                "--trust-root", bed.path("root.pem"), "--json",
            ])
            #expect(verify.status == 0, "\(verify.stderr)")
            #expect(try verify.object()["verified"] as? Bool == true)

            // A flipped signature byte, another challenge, another RP: exit 2.
            var tampered = assertion
            var tamperedResponse = try #require(assertion["response"] as? [String: Any])
            // Flip a bit of the last signature byte (not a base64 character: the last character
            // can carry only padding bits, and changing those changes nothing).
            let signature = try #require(tamperedResponse["signature"] as? String)
            var standard = signature.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
            var signatureBytes = [UInt8](try #require(Data(base64Encoded: standard)))
            signatureBytes[signatureBytes.count - 1] ^= 0x01
            tamperedResponse["signature"] = Data(signatureBytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            tampered["response"] = tamperedResponse
            try JSONSerialization.data(withJSONObject: tampered).write(
                to: URL(fileURLWithPath: bed.path("bad.json")))
            let bad = try bed.run([
                "verify", "--registration", bed.path("reg.json"), "--assertion", bed.path("bad.json"),
            ])
            #expect(bad.status == 2)
            let otherChallenge = try bed.run([
                "verify", "--registration", bed.path("reg.json"), "--challenge", "AAAAAAAAAAAAAAAAAAAAAA",
            ])
            #expect(otherChallenge.status == 2)
            let otherRP = try bed.run([
                "verify", "--registration", bed.path("reg.json"), "--rp", "example.com",
            ])
            #expect(otherRP.status == 2)

            // The public key alone (PEM) verifies the assertion too.
            try Data((registration["publicKeyPEM"] as? String ?? "").utf8).write(
                to: URL(fileURLWithPath: bed.path("key.pem")))
            let byKey = try bed.run([
                "verify", "--public-key", bed.path("key.pem"), "--assertion", bed.path("auth.json"),
            ])
            #expect(byKey.status == 0, "\(byKey.stderr)")

            // The credential is excluded now: registering it again is refused.
            let again = try bed.run([
                "register", "--device", bed.device, "--rp", "example.org", "--user", "alice", "--exclude", id,
                "--json",
            ])
            #expect(again.status == 1)
            #expect(
                (try again.object()["error"] as? [String: Any])?["code"] as? String
                    == "credential-excluded")

            let stopped = bed.stopServing()
            #expect(stopped.status == 0)
        }
    }

    @Test func listInfoAndState() throws {
        try PCSCBed.with { bed in
            try bed.serve(["--state", bed.path("state"), "--aaguid", Self.aaguid])
            let list = try bed.run(["list", "--json"])
            #expect(list.status == 0)
            let keys = try #require(try list.json() as? [[String: Any]])
            #expect(keys.count == 1)
            #expect(keys.first?["uri"] as? String == bed.device)
            #expect(keys.first?["transport"] as? String == "nfc")
            #expect(keys.first?["aaguid"] as? String == Self.aaguid)
            #expect((keys.first?["versions"] as? [String])?.contains("FIDO_2_0") == true)

            // Without --device the only key is used.
            let info = try bed.run(["info", "--json"])
            #expect(info.status == 0, "\(info.stderr)")
            let json = try info.object()
            #expect(json["aaguid"] as? String == Self.aaguid)
            #expect(json["versions"] as? [String] == ["U2F_V2", "FIDO_2_0", "FIDO_2_1", "FIDO_2_2", "FIDO_2_3"], "the default profile is ctap22")
            #expect((json["options"] as? [String: Bool])?["clientPin"] == false)
            #expect(json["pinUvAuthProtocols"] as? [Int] == [2, 1])
            #expect(json["maxMsgSize"] as? Int == 1200)
            #expect(json["pinRetries"] as? Int == 8)
            #expect(json["device"] as? String == bed.device)

            // The state survives a SIGTERM and a restart: same AAGUID, a PIN set before still set.
            let set = try bed.run(["pin", "set", "--pin-stdin", "--json"], input: "4321\n")
            #expect(set.status == 0, "\(set.stderr)")
            let stopped = bed.stopServing()
            #expect(stopped.status == 0)
            #expect(stopped.line?["aaguid"] as? String == Self.aaguid)
            try bed.serve(["--state", bed.path("state")])
            let status = try bed.run(["pin", "status", "--json"])
            #expect(try status.object()["pinSet"] as? Bool == true)
            #expect(try bed.run(["info", "--json"]).object()["aaguid"] as? String == Self.aaguid)
        }
    }

    @Test func pinCommands() throws {
        guard let python = PythonFido2.interpreter() else { return }
        try PCSCBed.with { bed in
            try bed.serve(["--attestation-root", bed.path("root.pem")])
            var status = try bed.run(["pin", "status", "--json"]).object()
            #expect(status["pinSet"] as? Bool == false)
            #expect(status["pinRetries"] as? Int == 8)

            #expect(try bed.run(["pin", "set", "--pin-stdin"], input: "12\n").status == 5)  // too short
            #expect(try bed.run(["pin", "set", "--pin-stdin"], input: "123456\n").status == 0)
            #expect(try bed.run(["pin", "set", "--pin-stdin"], input: "654321\n").status == 5)  // already set
            status = try bed.run(["pin", "status", "--json"]).object()
            #expect(status["pinSet"] as? Bool == true)

            // A wrong current PIN costs one attempt and exits 5.
            let wrong = try bed.run(["pin", "change", "--pin-stdin", "--json"], input: "000000\n7777777\n")
            #expect(wrong.status == 5)
            #expect((try wrong.object()["error"] as? [String: Any])?["code"] as? String == "pin-invalid")
            #expect(try bed.run(["pin", "status", "--json"]).object()["pinRetries"] as? Int == 7)
            let change = try bed.run(["pin", "change", "--pin-stdin"], input: "123456\n7777777\n")
            #expect(change.status == 0, "\(change.stderr)")
            #expect(try bed.run(["pin", "status", "--json"]).object()["pinRetries"] as? Int == 8)

            // With a PIN set, registration and --uv sign-in use it; python-fido2 sees UV.
            let register = try bed.run(
                ["register", "--rp", "example.org", "--user", "bob", "--resident", "--pin-stdin", "--json"],
                input: "7777777\n")
            try #require(register.status == 0, "\(register.stderr)")
            let checked = try PythonFido2.runScript(
                python, "check_registration.py", [bed.path("root.pem")], input: register.stdout)
            #expect(checked["userVerified"] as? Bool == true)
            let badPIN = try bed.run(
                ["authenticate", "--rp", "example.org", "--uv", "--pin-stdin"], input: "1111111\n")
            #expect(badPIN.status == 5)
            let signIn = try bed.run(
                ["authenticate", "--rp", "example.org", "--uv", "--pin-stdin", "--json"], input: "7777777\n")
            try #require(signIn.status == 0, "\(signIn.stderr)")
            let assertion = try signIn.object()
            // Discoverable: the user handle comes back, and it is the one registered.
            #expect(
                (assertion["response"] as? [String: Any])?["userHandle"] as? String
                    == (try register.object())["userId"] as? String)
            #expect(assertion["userVerified"] as? Bool == true)
        }
    }

    @Test func exitStatuses() throws {
        try PCSCBed.with { bed in
            try bed.serve(["--presence", "deny"])
            // The user declines on the key: 4.
            let denied = try bed.run([
                "register", "--device", bed.device, "--rp", "example.org", "--user", "a", "--json",
            ])
            #expect(denied.status == 4, "\(denied.stderr)")
            #expect(
                (try denied.object()["error"] as? [String: Any])?["code"] as? String
                    == "operation-denied")
            // An empty reader: 3.
            #expect(try bed.run(["info", "--device", bed.emptyDevice]).status == 3)
            // PC/SC cannot blink: 6.
            #expect(try bed.run(["wink", "--device", bed.device]).status == 6)
            // An origin that does not match the RP ID: usage, 64.
            let origin = try bed.run([
                "register", "--rp", "example.org", "--user", "a", "--origin", "https://evil.test",
            ])
            #expect(origin.status == 64)
            // No key at all and no --device: 3.
            bed.stopServing()
            #expect(try bed.run(["info"]).status == 3)
        }
    }
}
