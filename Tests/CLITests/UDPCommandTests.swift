import Foundation
import Testing

/// The device commands against `securitykey virtual serve --udp` (CTAPHID over UDP).
@Suite(.serialized) struct UDPCommandTests {
    @Test func registerAuthenticateWinkOverUDP() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        // local=0: any free local port, so parallel runs do not collide on the conventional one.
        let device = "udp:127.0.0.1:\(port)?local=0"
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("udp-root-\(UUID()).pem")
        defer { try? FileManager.default.removeItem(at: root) }
        let served = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--attestation-root", root.path]) {
            try Self.registerAuthenticateWink(device: device, port: port, root: root, python: python)
        }
        #expect(served.status == 0)
    }

    static func registerAuthenticateWink(device: String, port: Int, root: URL, python: String) throws {
        var info: [String: Any] = [:]
        for _ in 0..<50 {
            if let object = try? CLIRunner.run(["info", "--device", device, "--json"]).object(),
                object["aaguid"] != nil
            {
                info = object
                break
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect((info["device"] as? String)?.hasPrefix("udp:127.0.0.1:\(port)") == true)
        #expect((info["versions"] as? [String])?.contains("FIDO_2_0") == true)

        let register = try CLIRunner.run([
            "register", "--device", device, "--rp", "example.org", "--user", "u", "--json",
        ])
        try #require(register.status == 0, "\(register.stderr)")
        let checked = try PythonFido2.runScript(
            python, "check_registration.py", [root.path], input: register.stdout)
        #expect(checked["chainedToRoot"] as? Bool == true)
        let registration = try register.object()
        let id = try #require(registration["id"] as? String)
        let spki = try #require((registration["response"] as? [String: Any])?["publicKey"] as? String)
        let authenticate = try CLIRunner.run([
            "authenticate", "--device", device, "--rp", "example.org", "--credential", id, "--json",
        ])
        try #require(authenticate.status == 0, "\(authenticate.stderr)")
        let signed = try PythonFido2.runScript(
            python, "check_assertion.py", [spki], input: authenticate.stdout)
        #expect(signed["verified"] as? Bool == true)
        // CTAPHID can blink.
        #expect(try CLIRunner.run(["wink", "--device", device]).status == 0)
    }

    /// Waits (bounded) until the file at `url` contains `text`.
    static func waitFor(_ text: String, in url: URL, seconds: Double = 20) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if let data = FileManager.default.contents(atPath: url.path),
                String(decoding: data, as: UTF8.self).contains(text)
            {
                return true
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    @Test func interruptingARegistrationCancelsItOnTheKey() throws {
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("interrupt-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serveLog = directory.appendingPathComponent("serve.log")
        let registerErrors = directory.appendingPathComponent("register.err")
        let registerOutput = directory.appendingPathComponent("register.out")
        for file in [serveLog, registerErrors, registerOutput] {
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        }
        // A key whose user never touches it, logging each command it gets (-v).
        _ = try CLIRunner.withVirtualKey(
            ["--udp", "127.0.0.1:\(port)", "--presence", "never", "-v"],
            standardError: try FileHandle(forWritingTo: serveLog)
        ) {
            try Self.interruptRegistration(
                device: device, serveLog: serveLog, registerOutput: registerOutput,
                registerErrors: registerErrors)
        }
    }

    static func interruptRegistration(device: String, serveLog: URL, registerOutput: URL, registerErrors: URL)
        throws
    {
        try #require(Self.waitFor("served", in: serveLog), "the virtual key did not start")

        let register = Process()
        register.executableURL = CLIRunner.binary
        register.arguments = ["register", "--device", device, "--rp", "example.org", "--user", "u", "--json"]
        register.standardOutput = try FileHandle(forWritingTo: registerOutput)
        register.standardError = try FileHandle(forWritingTo: registerErrors)
        try register.run()
        defer { if register.isRunning { register.terminate() } }
        try #require(Self.waitFor("Touch your security key", in: registerErrors), "no touch prompt")
        register.interrupt()  // SIGINT, as Ctrl-C sends
        register.waitUntilExit()

        #expect(register.terminationReason == .exit)
        #expect(register.terminationStatus == 4)
        let output = try JSONSerialization.jsonObject(
            with: FileManager.default.contents(atPath: registerOutput.path) ?? Data()) as? [String: Any]
        #expect((output?["error"] as? [String: Any])?["code"] as? String == "cancelled")
        // The key was told (CTAPHID_CANCEL) and ended the request with CTAP2_ERR_KEEPALIVE_CANCEL.
        #expect(Self.waitFor("CTAPHID cancel", in: serveLog, seconds: 5))
        #expect(Self.waitFor("status=0x2d", in: serveLog, seconds: 5))
        // And it answers the next command.
        #expect(try CLIRunner.run(["info", "--device", device, "--json"]).status == 0)
    }

    @Test func interruptingAPINPromptRestoresTheTerminal() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        _ = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)", "--pin", "1234"]) {
            try Self.interruptPINPrompt(device: device, python: python)
        }
    }

    static func interruptPINPrompt(device: String, python: String) throws {
        CLIRunner.waitUntilServed(device)
        // Ctrl-C at the PIN prompt (echo off, the process blocked reading the terminal).
        let result = try PythonFido2.runScript(
            python, "interrupt_pin_prompt.py", [CLIRunner.binary.path, "pin", "change", "--device", device])
        #expect((result["prompt"] as? String)?.contains("Current PIN") == true, "\(result)")
        #expect(result["echoDuringPrompt"] as? Bool == false)
        #expect(result["echoAfter"] as? Bool == true)
        #expect(result["exitCode"] as? Int == 4)
        // No PIN was sent: the key still has all its attempts.
        let status = try CLIRunner.run(["pin", "status", "--device", device, "--json"]).object()
        #expect(status["pinRetries"] as? Int == 8, "\(status)")
    }
}
