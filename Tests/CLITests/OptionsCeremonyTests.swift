import Foundation
import Testing

/// `register --options` and `authenticate --options` with what python-fido2's Fido2Server
/// sends, against a virtual key over UDP; the server verifies what the CLI returns.
@Suite(.serialized) struct OptionsCeremonyTests {
    /// Runs Tests/CLITests/Python/webauthn_server.py; returns its standard output.
    static func server(
        _ python: String, _ arguments: [String], input: String? = nil, extensions: String? = nil
    ) throws -> String {
        let script = PythonFido2.scripts.appendingPathComponent("webauthn_server.py").path
        let result = try CLIRunner.run(
            executable: URL(fileURLWithPath: python), [script] + arguments, input: input,
            environment: extensions.map { ["WEBAUTHN_EXTENSIONS": $0] } ?? [:])
        guard result.status == 0 else {
            throw CLITestError("webauthn_server.py \(arguments[0]) failed: \(result.stderr)")
        }
        return result.stdout
    }

    static func object(_ text: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw CLITestError("not a JSON object: \(text)")
        }
        return object
    }

    @Test func serverOptionsRegisterAndSignIn() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("rp-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: state) }
        let served = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--pin", "123456"]) {
            // Wait until the key answers.
            for _ in 0..<50 where (try? CLIRunner.run(["info", "--device", device]).status) != 0 {
                Thread.sleep(forTimeInterval: 0.1)
            }
            // Registration, options from a file; UV required, so the PIN is asked for.
            let options = try Self.server(python, ["register-begin", state.path, "required"])
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("opts-\(UUID()).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(options.utf8).write(to: file)
            let register = try CLIRunner.run(
                ["register", "--device", device, "--options", file.path, "--pin-stdin", "--json"],
                input: "123456\n")
            try #require(register.status == 0, "\(register.stderr)")
            let registered = try Self.object(
                try Self.server(python, ["register-complete", state.path], input: register.stdout))
            #expect(registered["userVerified"] as? Bool == true)
            #expect(
                registered["credentialId"] as? String == (try Self.object(register.stdout))["id"] as? String)

            // Sign-in, options on standard input, the origin given explicitly.
            let request = try Self.server(python, ["authenticate-begin", state.path])
            let authenticate = try CLIRunner.run(
                [
                    "authenticate", "--device", device, "--options", "-", "--origin", "https://example.org",
                    "--json",
                ],
                input: request)
            try #require(authenticate.status == 0, "\(authenticate.stderr)")
            let signed = try Self.object(
                try Self.server(python, ["authenticate-complete", state.path], input: authenticate.stdout))
            #expect(signed["verified"] as? Bool == true)
            #expect(signed["credentialId"] as? String == registered["credentialId"] as? String)

            // An origin the RP ID does not belong to is refused before the key is asked.
            let foreign = try CLIRunner.run(
                [
                    "authenticate", "--device", device, "--options", "-", "--origin", "https://evil.example",
                    "--json",
                ],
                input: try Self.server(python, ["authenticate-begin", state.path]))
            #expect(foreign.status != 0)
            #expect(foreign.stderr.contains("relying party"))
        }
        #expect(served.status == 0)
    }

    @Test func malformedOptionsAreRefusedNamingTheMember() throws {
        let bad = #"{"publicKey":{"rp":{"id":"example.org"},"user":{"id":"AQ","name":5},"challenge":"AAAA"}}"#
        let result = try CLIRunner.run(
            ["register", "--device", "udp:127.0.0.1:9", "--options", "-"], input: bad)
        #expect(result.status != 0)
        #expect(result.stderr.contains("user.name"))
    }

    /// Extensions in the server's options reach the key as the flags would send them: credProps
    /// and prf at registration, prf eval at sign-in (the same secret `--prf-salt` gives), and
    /// the server still verifies both responses.
    @Test func extensionsInTheServersOptionsAreUsed() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("rp-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: state) }
        _ = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--pin", "123456", "--profile", "ctap21"]) {
            CLIRunner.waitUntilServed(device)
            let options = try Self.server(
                python, ["register-begin", state.path, "required", "resident"],
                extensions: #"{"credProps": true, "prf": {}}"#)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("opts-\(UUID()).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(options.utf8).write(to: file)
            let register = try CLIRunner.run(
                ["register", "--device", device, "--options", file.path, "--pin-stdin", "--json"],
                input: "123456\n")
            try #require(register.status == 0, "\(register.stderr)")
            let results = try Self.object(register.stdout)["clientExtensionResults"] as? [String: Any]
            #expect((results?["credProps"] as? [String: Any])?["rk"] as? Bool == true)
            #expect((results?["prf"] as? [String: Any])?["enabled"] as? Bool == true)
            _ = try Self.server(python, ["register-complete", state.path], input: register.stdout)

            let salt = "c2FsdC1mb3ItdGhlLXZhdWx0"
            let request = try Self.server(
                python, ["authenticate-begin", state.path, "required"],
                extensions: #"{"prf": {"eval": {"first": "\#(salt)"}}}"#)
            try Data(request.utf8).write(to: file)
            let viaOptions = try CLIRunner.run(
                ["authenticate", "--device", device, "--options", file.path, "--pin-stdin", "--json"],
                input: "123456\n")
            try #require(viaOptions.status == 0, "\(viaOptions.stderr)")
            let signed = try Self.object(
                try Self.server(python, ["authenticate-complete", state.path], input: viaOptions.stdout))
            #expect(signed["verified"] as? Bool == true)
            let optionsResults = try Self.object(viaOptions.stdout)["clientExtensionResults"] as? [String: Any]
            let first = ((optionsResults?["prf"] as? [String: Any])?["results"] as? [String: Any])?["first"] as? String
            try #require(first != nil, "\(viaOptions.stdout)")

            let viaFlags = try CLIRunner.run(
                [
                    "authenticate", "--device", device, "--rp", "example.org", "--uv", "--prf-salt", salt,
                    "--pin-stdin", "--json",
                ],
                input: "123456\n")
            try #require(viaFlags.status == 0, "\(viaFlags.stderr)")
            let flagResults = try Self.object(viaFlags.stdout)["clientExtensionResults"] as? [String: Any]
            #expect(((flagResults?["prf"] as? [String: Any])?["results"] as? [String: Any])?["first"] as? String == first)
        }
    }
}
