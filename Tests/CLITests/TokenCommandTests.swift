import Foundation
import Testing

/// `securitykey token save|forget|list` and the commands that read with a stored persistent
/// token (CTAP 2.2 pcmr), end to end against `virtual serve --profile ctap22` over UDP, with
/// python-fido2 2.2's ClientPin and Info.get_identifier as the independent view of the key.
@Suite(.serialized) struct TokenCommandTests {
    /// A served key with its state file, the tool's state directory and the key's secrets log.
    final class Bench {
        let work: URL
        let port = CLIRunner.freeUDPPort()
        var device: String { "udp:127.0.0.1:\(port)" }
        var key: ChoiceCommandTests.ServedKey?
        var environment: [String: String] { ["XDG_STATE_HOME": work.appendingPathComponent("xdg-state").path] }
        var storePath: String { work.appendingPathComponent("xdg-state/securitykey/tokens.cbor").path }
        var secretsLog: URL { work.appendingPathComponent("secrets.log") }

        init() throws { work = try ChoiceCommandTests.scratch("token") }

        deinit { try? FileManager.default.removeItem(at: work) }

        /// (Re)starts the key on the same state file: a power-up.
        func serve() throws {
            key = nil
            key = try ChoiceCommandTests.ServedKey(
                [
                    "--udp", "127.0.0.1:\(port)", "--state", work.appendingPathComponent("state").path, "--profile",
                    "ctap22", "--secrets-log", secretsLog.path,
                ],
                environment: ["SECURITYKEY_ALLOW_SECRETS_LOG": "1"], log: work.appendingPathComponent("serve.log"))
            for _ in 0..<100 {
                if (try? run(["info"]).status) == 0 { return }
                Thread.sleep(forTimeInterval: 0.05)
            }
            throw CLITestError("the UDP key did not answer within 5 s: \(key?.logText ?? "")")
        }

        func run(_ arguments: [String], input: String? = nil, extra: [String: String] = [:]) throws -> CLIRunner.Result {
            try CLIRunner.run(
                arguments + ["--device", device], input: input, environment: environment.merging(extra) { $1 })
        }

        func object(_ arguments: [String], input: String? = nil, sourceLocation: SourceLocation = #_sourceLocation)
            throws -> [String: Any]
        {
            let result = try run(arguments + ["--json"], input: input)
            try #require(result.status == 0, "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
            return try result.object()
        }
    }

    @Test func aStoredTokenReadsWithoutThePINUntilThePINChangesOrTheKeyIsReset() throws {
        let bench = try Bench.withPINAndCredential()

        // Without a stored token, reading the credentials needs the PIN (standard input is empty).
        let noToken = try bench.run(["credentials", "list", "--pin-stdin", "--json"], input: "")
        #expect(noToken.status != 0, "\(noToken.stdout)")

        let saved = try bench.object(["token", "save", "--pin-stdin"], input: "1234\n")
        let identifier = try #require(saved["identifier"] as? String)
        #expect(identifier.count == 32, "a 16-byte identifier in hex: \(identifier)")
        #expect(saved["path"] as? String == bench.storePath)
        let mode = try FileManager.default.attributesOfItem(atPath: bench.storePath)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // The PIN is not asked: standard input is empty, yet the credentials are listed.
        let listed = try bench.run(
            ["credentials", "list", "--pin-stdin", "--json", "-vv"], input: "", extra: ["SECURITYKEY_TRACE": "1"])
        try #require(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stderr.contains("using the stored token"), "\(listed.stderr)")
        let credentials = try #require(try listed.json() as? [[String: Any]])
        #expect(credentials.map { $0["rpId"] as? String } == ["example.com"])
        // Not a byte of the persistent token (recorded by the key when it issued it) in the trace.
        let secrets = SecretsLoggingTests.recordedSecrets(
            String(decoding: FileManager.default.contents(atPath: bench.secretsLog.path) ?? Data(), as: UTF8.self))
        let tokens = secrets.filter { $0.kind == "PIN_UV_AUTH_TOKEN" }.map(\.bytes)
        #expect(!tokens.isEmpty)
        for token in tokens {
            for spelling in SecretsLoggingTests.spellings(token) {
                #expect(!listed.stderr.contains(spelling) && !listed.stdout.contains(spelling))
            }
        }
        #expect(listed.stderr.contains("CTAPHID") || listed.stderr.contains("cbor"), "the trace ran: \(listed.stderr.prefix(300))")
        // Nor in the key's own log, nor in what `token list` shows.
        let shown = try bench.run(["token", "list"]).stdout + (bench.key?.logText ?? "")
        for token in tokens {
            for spelling in SecretsLoggingTests.spellings(token) { #expect(!shown.contains(spelling)) }
        }

        let metadata = try bench.object(["credentials", "info", "--pin-stdin"], input: "")
        #expect(metadata["existing"] as? Int == 1)
        #expect(metadata["storedToken"] as? Bool == true)

        let info = try bench.object(["info"])
        #expect(info["identifier"] as? String == identifier)
        #expect(info["storedToken"] as? Bool == true)
        let credStoreState = try #require(info["credStoreState"] as? String)

        // python-fido2 obtains its own pcmr token with the PIN and decrypts encIdentifier itself.
        if let python = PythonFido2.interpreter() {
            let view = try PythonFido2.runScript(python, "persistent_token.py", [String(bench.port)], input: "1234\n")
            #expect(view["perCredMgmtRO"] as? Bool == true)
            #expect(view["identifier"] as? String == identifier)
            #expect(view["identifierAgain"] as? String == identifier)
            #expect(view["encIdentifierDiffers"] as? Bool == true, "a fresh IV in every getInfo")
            #expect(view["credStoreState"] as? String == credStoreState)
            #expect(view["existing"] as? Int == 1)
            #expect(view["rpIds"] as? [String] == ["example.com"])
            #expect(view["deleteWithPersistentToken"] as? String == "PIN_AUTH_INVALID")
        }

        // The token and the identifier survive a restart of the key (a power cycle).
        try bench.serve()
        let again = try bench.object(["info"])
        #expect(again["identifier"] as? String == identifier)
        #expect(try bench.object(["credentials", "info", "--pin-stdin"], input: "")["storedToken"] as? Bool == true)
        let tokenList = try #require(try bench.run(["token", "list", "--json"]).json() as? [[String: Any]])
        #expect(tokenList.map { $0["identifier"] as? String } == [identifier])
        #expect(tokenList.first?["device"] as? String == bench.device)

        // A PIN change makes the key refuse the stored token: the tool says so, removes it and
        // asks for the PIN instead; no PIN attempt is spent on the stale token.
        _ = try bench.object(["pin", "change", "--pin-stdin"], input: "1234\n5678\n")
        let afterChange = try bench.run(["credentials", "list", "--pin-stdin", "--json"], input: "5678\n")
        try #require(afterChange.status == 0, "\(afterChange.stderr)")
        #expect(afterChange.stderr.contains("no longer valid"), "\(afterChange.stderr)")
        #expect(try bench.run(["token", "list", "--json"]).json() as? [Any] != nil)
        #expect((try bench.run(["token", "list", "--json"]).json() as? [Any])?.isEmpty == true)
        #expect(try bench.object(["pin", "status"])["pinRetries"] as? Int == 8)

        // Saved again with the new PIN: same key, same identifier.
        let resaved = try bench.object(["token", "save", "--pin-stdin"], input: "5678\n")
        #expect(resaved["identifier"] as? String == identifier)

        // A reset (within 10 s of power-up) replaces the token and the identifier.
        try bench.serve()
        _ = try bench.object(["reset", "--yes", "--timeout", "10"])
        let afterReset = try bench.run(["info", "--json"])
        try #require(afterReset.status == 0, "\(afterReset.stderr)")
        #expect(afterReset.stderr.contains("no longer valid"), "\(afterReset.stderr)")
        let resetInfo = try afterReset.object()
        #expect(resetInfo["storedToken"] as? Bool == false)
        #expect(resetInfo["identifier"] is NSNull)
        #expect((try bench.run(["token", "list", "--json"]).json() as? [Any])?.isEmpty == true)

        // forget: save on the reset key (new PIN), then forget it.
        _ = try bench.object(["pin", "set", "--pin-stdin"], input: "4321\n")
        let fresh = try bench.object(["token", "save", "--pin-stdin"], input: "4321\n")
        #expect(fresh["identifier"] as? String != identifier, "a reset key has a new identifier")
        #expect(try bench.object(["token", "forget"])["removed"] as? Int == 1)
        #expect(!FileManager.default.fileExists(atPath: bench.storePath))
    }
}
