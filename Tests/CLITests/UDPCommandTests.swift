import Foundation
import Testing

/// The device commands against `securitykey virtual serve --udp` (CTAPHID over UDP).
@Suite(.serialized) struct UDPCommandTests {
    @Test func registerAuthenticateWinkOverUDP() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = 20000 + Int(ProcessInfo.processInfo.processIdentifier % 20000)
        // local=0: any free local port, so parallel runs do not collide on the conventional one.
        let device = "udp:127.0.0.1:\(port)?local=0"
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("udp-root-\(UUID()).pem")
        defer { try? FileManager.default.removeItem(at: root) }
        let serve = Process()
        serve.executableURL = CLIRunner.binary
        serve.arguments = ["virtual", "serve", "--udp", "127.0.0.1:\(port)", "--attestation-root", root.path]
        serve.standardOutput = FileHandle.nullDevice
        serve.standardError = FileHandle.nullDevice
        try serve.run()
        defer {
            if serve.isRunning { serve.terminate() }
            serve.waitUntilExit()
        }
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
        serve.terminate()
        serve.waitUntilExit()
        #expect(serve.terminationStatus == 0)
    }
}
