import Foundation
import Testing

/// `decode` reads what `register --json` and `authenticate --json` print, and names a
/// credential by the same base64url string those commands use.
@Suite(.serialized) struct DecodeResponseTests {
    /// Base64url without padding of the bytes `hex` spells (RFC 4648 §5), written here with
    /// Foundation's encoder rather than the tool's.
    static func bytes(hex: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    static func base64URL(hex: String) -> String? {
        guard let bytes = bytes(hex: hex) else { return nil }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of base64url `text`, decoded with Foundation.
    static func bytes(base64URL text: String) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard)
    }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    @Test func decodeReadsOurRegistrationAndAuthenticationOutput() throws {
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let challenge = "AAECAwQFBgcICQoLDA0ODxAREhM"
        let served = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)"]) {
            CLIRunner.waitUntilServed(device)
            let register = try CLIRunner.run([
                "register", "--device", device, "--rp", "example.org", "--user", "alice", "--resident",
                "--challenge", challenge, "--attestation", "direct", "--json",
            ])
            try #require(register.status == 0, "\(register.stderr)")
            let registration = try register.object()
            let id = try #require(registration["id"] as? String)
            let response = try #require(registration["response"] as? [String: Any])

            // From standard input, recognised without --as.
            let decoded = try CLIRunner.run(["decode", "-"], input: register.stdout)
            try #require(decoded.status == 0, "\(decoded.stderr)")
            let reg = try decoded.object()
            #expect(reg["kind"] as? String == "registration-response")
            #expect(reg["id"] as? String == id)
            #expect(reg["idMatchesAuthenticatorData"] as? Bool == true)
            let clientData = reg["clientData"] as? [String: Any]
            #expect(clientData?["type"] as? String == "webauthn.create")
            #expect(clientData?["challenge"] as? String == challenge)
            #expect(clientData?["origin"] as? String == "https://example.org")
            let object = try #require(reg["attestationObject"] as? [String: Any])
            #expect(object["fmt"] as? String == "packed")
            let attested = (object["authData"] as? [String: Any])?["attestedCredentialData"] as? [String: Any]
            // The same credential ID, character for character: greppable across outputs.
            #expect(attested?["credentialId"] as? String == id)
            #expect(decoded.stdout.contains("\"\(id)\""))
            // The public key register printed (SPKI, base64url) is the one decode found (hex).
            let spki = try #require((response["publicKey"] as? String).flatMap(Self.bytes(base64URL:)))
            #expect(
                (attested?["credentialPublicKey"] as? [String: Any])?["spki"] as? String == Self.hex(spki))
            // The attestationObject alone, given as --base64, decodes the same way.
            let alone = try CLIRunner.run([
                "decode", "--base64", try #require(response["attestationObject"] as? String),
            ])
            #expect(try alone.object()["kind"] as? String == "attestation-object")

            let authenticate = try CLIRunner.run([
                "authenticate", "--device", device, "--rp", "example.org", "--challenge", challenge, "--json",
            ])
            try #require(authenticate.status == 0, "\(authenticate.stderr)")
            let assertion = try authenticate.object()
            let signed = try #require(assertion["response"] as? [String: Any])
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("auth-\(UUID()).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(authenticate.stdout.utf8).write(to: file)
            let decodedAuth = try CLIRunner.run(["decode", file.path, "--json"])
            try #require(decodedAuth.status == 0, "\(decodedAuth.stderr)")
            let auth = try decodedAuth.object()
            #expect(auth["kind"] as? String == "authentication-response")
            #expect(auth["id"] as? String == id)
            #expect((auth["clientData"] as? [String: Any])?["type"] as? String == "webauthn.get")
            let authData = auth["authenticatorData"] as? [String: Any]
            #expect(authData?["signCount"] as? Int == assertion["signCount"] as? Int)
            #expect((authData?["flagBits"] as? [String: Any])?["UP"] as? Bool == true)
            let signature = try #require((signed["signature"] as? String).flatMap(Self.bytes(base64URL:)))
            #expect(auth["signature"] as? String == Self.hex(signature))
            // The user handle as register printed it (discoverable credential).
            #expect(auth["userHandle"] as? String == registration["userId"] as? String)
            #expect(auth["userHandle"] as? String == signed["userHandle"] as? String)
        }
        #expect(served.status == 0)
    }

    @Test func aResponseWithoutItsPartsIsRefused() throws {
        let result = try CLIRunner.run(
            ["decode", "--as", "registration-response", "-", "--json"], input: #"{"id":"AAAA","response":{}}"#
        )
        #expect(result.status == 1)
        #expect((try result.object()["error"] as? [String: Any])?["code"] as? String == "invalid-input")
    }
}
