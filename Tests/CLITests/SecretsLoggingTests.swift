import Foundation
import Testing

/// Every command that handles a secret, run at the most verbose level (`-vv` and
/// SECURITYKEY_TRACE=1) against `virtual serve -vv`: no PIN, PIN hash, salt, pinUvAuthToken,
/// shared secret or hmac-secret/PRF output appears in any output or the key's log, in hex,
/// base64 or base64url, except an output on the standard output of the command that prints it
/// by design. The key writes the tokens it issues and the secrets it agrees to its secrets log
/// (`--secrets-log`), the test's only way to know them.
@Suite struct SecretsLoggingTests {
    /// The spellings a secret could leak in.
    static func spellings(_ bytes: [UInt8]) -> [String] {
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let base64 = Data(bytes).base64EncodedString()
        let unpadded = base64.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        let base64url = unpadded.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return [hex, hex.uppercased(), base64, unpadded, base64url]
    }

    /// SHA-256 of `text`, computed by coreutils (outside the code under test).
    static func sha256(_ text: String) throws -> [UInt8] {
        let line = try CLIRunner.run(executable: URL(fileURLWithPath: "/usr/bin/sha256sum"), [], input: text).stdout
        let hex = Array(line.prefix(64))
        return stride(from: 0, to: hex.count, by: 2).compactMap { UInt8(String(hex[$0..<$0 + 2]), radix: 16) }
    }

    static func bytes(base64url text: String) -> [UInt8]? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { [UInt8]($0) }
    }

    /// Finds the first string value under `key` anywhere in a JSON value.
    static func find(_ key: String, in value: Any) -> String? {
        if let object = value as? [String: Any] {
            if let found = object[key] as? String { return found }
            for (_, v) in object { if let found = find(key, in: v) { return found } }
        } else if let array = value as? [Any] {
            for v in array { if let found = find(key, in: v) { return found } }
        }
        return nil
    }

    /// The lines of a `--secrets-log` file: `KIND PROTOCOL HEX`.
    static func recordedSecrets(_ text: String) -> [(kind: String, protocolVersion: Int, bytes: [UInt8])] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, let version = Int(fields[1]), fields[2].count % 2 == 0 else { return nil }
            let hex = Array(fields[2])
            let bytes = stride(from: 0, to: hex.count, by: 2).compactMap { UInt8(String(hex[$0..<$0 + 2]), radix: 16) }
            guard bytes.count * 2 == hex.count else { return nil }
            return (String(fields[0]), version, bytes)
        }
    }

    /// The secrets log is never written by accident: without the acknowledgement the key
    /// refuses to start, and writes no file.
    @Test func theSecretsLogNeedsAnAcknowledgement() throws {
        let work = try ChoiceCommandTests.scratch("secrets-ack")
        defer { try? FileManager.default.removeItem(at: work) }
        let file = work.appendingPathComponent("secrets.log")
        let result = try CLIRunner.run(
            ["virtual", "serve", "--udp", "127.0.0.1:\(CLIRunner.freeUDPPort())", "--secrets-log", file.path],
            environment: ["SECURITYKEY_ALLOW_SECRETS_LOG": "yes"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("SECURITYKEY_ALLOW_SECRETS_LOG=1"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }

    @Test func noSecretAppearsAtTheMostVerboseLevel() throws {
        // python-fido2 makes the credential with a largeBlobKey (the CLI's register has no
        // option for one) and reports the key, a secret the test then looks for.
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        let work = try ChoiceCommandTests.scratch("secrets")
        defer { try? FileManager.default.removeItem(at: work) }
        let secretsLog = work.appendingPathComponent("secrets.log")
        let key = try ChoiceCommandTests.ServedKey(
            [
                "--udp", "127.0.0.1:\(port)", "--state", work.appendingPathComponent("state").path, "--profile",
                "ctap21", "--bio-samples", "good,good,good", "--bio-samples-required", "3", "-v",
                "--secrets-log", secretsLog.path,
            ],
            environment: ["SECURITYKEY_ALLOW_SECRETS_LOG": "1"],
            log: work.appendingPathComponent("serve.log"))
        let device = "udp:127.0.0.1:\(port)?local=0"
        var ready = false
        for _ in 0..<100 where !ready {
            ready = (try? CLIRunner.run(["info", "--device", device]).status) == 0
            if !ready { Thread.sleep(forTimeInterval: 0.05) }
        }
        try #require(ready, "the UDP key did not answer: \(key.logText)")

        let firstPIN = "483921", secondPIN = "572046"
        let hmacSalt = [UInt8](repeating: 0x3C, count: 16) + (0..<16).map { UInt8($0 * 11 + 5) }
        let prfSalt = (0..<32).map { UInt8(($0 * 29 + 7) & 0xFF) }
        var results: [(name: String, result: CLIRunner.Result)] = []
        func run(_ name: String, _ arguments: [String], input: String = "") throws -> CLIRunner.Result {
            let result = try CLIRunner.run(
                arguments + ["--device", device, "-vv"], input: input, environment: ["SECURITYKEY_TRACE": "1"])
            #expect(result.status == 0, "\(name): \(result.stderr.suffix(2000))")
            #expect(!result.stderr.isEmpty, "\(name) logged nothing")
            results.append((name, result))
            return result
        }
        _ = try run("pin set", ["pin", "set", "--pin-stdin"], input: firstPIN + "\n")
        _ = try run("pin change", ["pin", "change", "--pin-stdin"], input: "\(firstPIN)\n\(secondPIN)\n")
        _ = try run("pin verify", ["pin", "verify", "--pin-stdin"], input: secondPIN + "\n")
        let registered = try run(
            "register",
            [
                "register", "--rp", "example.com", "--user", "alice", "--resident", "--uv", "--hmac-secret",
                "--pin-stdin", "--json",
            ], input: secondPIN + "\n")
        let credential = try #require(try registered.object()["id"] as? String)
        let hmac = try run(
            "authenticate hmac-secret",
            [
                "authenticate", "--rp", "example.com", "--credential", credential, "--uv", "--hmac-salt",
                Self.spellings(hmacSalt)[2], "--pin-stdin", "--json",
            ], input: secondPIN + "\n")
        let prfCredential = try #require(
            try run(
                "register prf",
                ["register", "--rp", "example.org", "--user", "bob", "--resident", "--uv", "--prf", "--pin-stdin", "--json"],
                input: secondPIN + "\n"
            ).object()["id"] as? String)
        let prf = try run(
            "authenticate prf",
            [
                "authenticate", "--rp", "example.org", "--credential", prfCredential, "--uv", "--prf-salt",
                Self.spellings(prfSalt)[2], "--pin-stdin", "--json",
            ], input: secondPIN + "\n")
        let made = try PythonFido2.runScript(
            python, "large_blobs.py", [String(port), "make", "c.example", "carol"], input: secondPIN + "\n")
        let blobCredential = try #require(made["credentialId"] as? String)
        let blobKeyText = try #require(made["largeBlobKey"] as? String)
        let blobKey = try #require(
            blobKeyText.count == 64
                ? stride(from: 0, to: 64, by: 2).compactMap { i -> UInt8? in
                    let chars = Array(blobKeyText)
                    return UInt8(String(chars[i..<i + 2]), radix: 16)
                } : Self.bytes(base64url: blobKeyText))
        #expect(blobKey.count == 32)
        let blob = work.appendingPathComponent("blob")
        try Data("a large blob".utf8).write(to: blob)
        _ = try run(
            "largeblob set", ["largeblob", "set", "--credential", blobCredential, "--pin-stdin", blob.path],
            input: secondPIN + "\n")
        _ = try run(
            "largeblob get", ["largeblob", "get", "--credential", blobCredential, "--pin-stdin"], input: secondPIN + "\n")
        _ = try run("credentials list", ["credentials", "list", "--pin-stdin", "--json"], input: secondPIN + "\n")
        _ = try run("bio enroll", ["bio", "enroll", "--name", "thumb", "--pin-stdin", "--json"], input: secondPIN + "\n")

        // The secrets the test knows from outside: the PINs, their hashes as the key stores and
        // receives them (SHA-256(PIN) left 16 bytes, CTAP 2.1 §6.5.5.5), and the salts.
        var secrets: [(name: String, bytes: [UInt8])] = []
        for pin in [firstPIN, secondPIN] {
            secrets.append(("PIN \(pin)", Array(pin.utf8)))
            secrets.append(("PIN hash of \(pin)", Array(try Self.sha256(pin).prefix(16))))
        }
        secrets.append(("hmac-secret salt", hmacSalt))
        secrets.append(("PRF input", prfSalt))
        secrets.append(("large-blob key", blobKey))
        // The tokens and shared secrets the key recorded; protocol two's secret is an HMAC key
        // and an AES key, each of which could leak alone.
        let recorded = Self.recordedSecrets(
            String(decoding: FileManager.default.contents(atPath: secretsLog.path) ?? Data(), as: UTF8.self))
        let tokens = recorded.filter { $0.kind == "PIN_UV_AUTH_TOKEN" }
        let shared = recorded.filter { $0.kind == "SHARED_SECRET" }
        #expect(tokens.count >= 2 * 6, "the key recorded \(tokens.count) tokens")
        #expect(shared.count >= 6, "the key recorded \(shared.count) shared secrets")
        for (index, token) in tokens.enumerated() {
            #expect(token.bytes.count == 32)
            secrets.append(("pinUvAuthToken #\(index) (protocol \(token.protocolVersion))", token.bytes))
        }
        for (index, secret) in shared.enumerated() {
            let name = "shared secret #\(index) (protocol \(secret.protocolVersion))"
            #expect(secret.bytes.count == (secret.protocolVersion == 2 ? 64 : 32), "\(name)")
            secrets.append((name, secret.bytes))
            if secret.bytes.count == 64 {
                secrets.append((name + " HMAC key", Array(secret.bytes[..<32])))
                secrets.append((name + " AES key", Array(secret.bytes[32...])))
            }
        }
        // Outputs the commands print by design: allowed on their own command's stdout only.
        var outputs: [(name: String, bytes: [UInt8], printedBy: String)] = []
        for (name, result, field) in [
            ("authenticate hmac-secret", hmac, "output1"), ("authenticate prf", prf, "first"),
        ] {
            let json = try result.json()
            guard let text = Self.find(field, in: json),
                let bytes = Self.bytes(base64url: text) ?? Data(base64Encoded: text).map({ [UInt8]($0) })
            else {
                Issue.record("\(name) printed no output to look for: \(result.stdout)")
                continue
            }
            outputs.append(("output of \(name)", bytes, name))
        }

        let serveLog = key.logText
        #expect(serveLog.contains("0x") || serveLog.count > 200, "the key logged little: \(serveLog)")
        var places: [(name: String, text: String)] = [("virtual key log", serveLog)]
        for (name, result) in results {
            places.append(("\(name) stderr", result.stderr))
            places.append(("\(name) stdout", result.stdout))
        }
        for (secret, bytes) in secrets {
            for spelling in Self.spellings(bytes) + (secret.hasPrefix("PIN ") ? [String(decoding: bytes, as: UTF8.self)] : []) {
                for (place, text) in places {
                    #expect(!text.contains(spelling), "\(secret) appears as \(spelling) in \(place)")
                }
            }
        }
        for (secret, bytes, printedBy) in outputs {
            // The control: where it is printed by design, the search finds it.
            let own = places.first { $0.name == "\(printedBy) stdout" }?.text ?? ""
            #expect(Self.spellings(bytes).contains { own.contains($0) }, "\(secret) not found where printed")
            for spelling in Self.spellings(bytes) {
                for (place, text) in places where place != "\(printedBy) stdout" {
                    #expect(!text.contains(spelling), "\(secret) appears as \(spelling) in \(place)")
                }
            }
        }
    }
}
