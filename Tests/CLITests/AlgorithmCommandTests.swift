import Foundation
import Testing

/// `register --alg` with every algorithm the virtual key offers, then `authenticate` and `verify`;
/// python-fido2 checks each registration (packed attestation, and the SPKI `publicKey` against the
/// COSE key through cryptography) and each assertion (its fido2.cose class for the algorithm).
@Suite(.serialized) struct AlgorithmCommandTests {
    static let challenge = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
    static let challengeHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    /// `--alg` names and their IANA COSE numbers, with python-fido2's class name for each.
    static let algorithms: [(name: String, cose: Int, pythonClass: String)] = [
        ("es256", -7, "ES256"), ("eddsa", -8, "EdDSA"), ("es384", -35, "ES384"), ("es512", -36, "ES512"),
        ("es256k", -47, "ES256K"), ("rs256", -257, "RS256"), ("ps256", -37, "PS256"),
        ("mldsa65", -49, "MLDSA65"), ("mldsa87", -50, "MLDSA87"),
    ]

    @Test func everyAlgorithmRegistersAuthenticatesAndVerifies() throws {
        guard let python = PythonFido2.interpreter() else { return }
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("algorithms-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let root = directory.appendingPathComponent("root.pem").path
        let served = try CLIRunner.withVirtualKey([
            "--udp", "127.0.0.1:\(port)", "--attestation-root", root, "--algorithms",
            Self.algorithms.map(\.name).joined(separator: ","),
        ]) {
            CLIRunner.waitUntilServed(device)
            for algorithm in Self.algorithms {
                try Self.ceremony(algorithm, python: python, device: device, root: root, directory: directory)
            }
        }
        #expect(served.status == 0)
    }

    /// secp256k1 is OpenSSL's libcrypto's, loaded when a secp256k1 key is first used. Where it
    /// cannot be loaded (here: a file that is not a library first on LD_LIBRARY_PATH), `verify`
    /// still verifies an ES256 sign-in and refuses only the ES256K one, naming libcrypto.
    @Test func withoutLibcryptoOnlySecp256k1KeysFailAndSayWhy() throws {
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("libcrypto-\(UUID())")
        let broken = directory.appendingPathComponent("lib")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("not a shared library".utf8).write(to: broken.appendingPathComponent("libcrypto.so.3"))
        let root = directory.appendingPathComponent("root.pem").path
        let served = try CLIRunner.withVirtualKey([
            "--udp", "127.0.0.1:\(port)", "--attestation-root", root, "--algorithms", "es256,es256k",
        ]) {
            CLIRunner.waitUntilServed(device)
            for name in ["es256", "es256k"] {
                let register = try CLIRunner.run([
                    "register", "--device", device, "--rp", "example.org", "--user", name, "--alg", name, "--json",
                ])
                try #require(register.status == 0, "\(name): \(register.stderr)")
                let file = directory.appendingPathComponent("\(name).json")
                try Data(register.stdout.utf8).write(to: file)
                let id = try #require(try register.object()["id"] as? String)
                let authenticate = try CLIRunner.run([
                    "authenticate", "--device", device, "--rp", "example.org", "--credential", id, "--json",
                ])
                try #require(authenticate.status == 0, "\(name): \(authenticate.stderr)")
                let assertion = directory.appendingPathComponent("\(name)-assertion.json")
                try Data(authenticate.stdout.utf8).write(to: assertion)
                // The attestation is signed by the key's P-256 attestation key; the assertion by
                // the credential's own key, so only the assertion needs secp256k1.
                let verify = try CLIRunner.run(
                    [
                        "verify", "--registration", file.path, "--assertion", assertion.path, "--trust-root", root,
                        "--rp", "example.org",
                    ],
                    environment: ["LD_LIBRARY_PATH": broken.path])
                if name == "es256" {
                    #expect(verify.status == 0, "\(verify.stderr)")
                } else {
                    #expect(verify.status != 0)
                    #expect(verify.stderr.contains("libcrypto"), "\(verify.stderr)")
                }
            }
        }
        #expect(served.status == 0)
    }

    static func ceremony(
        _ algorithm: (name: String, cose: Int, pythonClass: String), python: String, device: String, root: String,
        directory: URL
    ) throws {
        let register = try CLIRunner.run([
            "register", "--device", device, "--rp", "example.org", "--user", algorithm.name, "--alg", algorithm.name,
            "--challenge", challenge, "--json",
        ])
        try #require(register.status == 0, "\(algorithm.name): \(register.stderr)")
        let registration = try register.object()
        let response = registration["response"] as? [String: Any] ?? [:]
        #expect(response["publicKeyAlgorithm"] as? Int == algorithm.cose, "\(algorithm.name)")
        let checked = try PythonFido2.runScript(python, "check_registration.py", [root], input: register.stdout)
        #expect(checked["fmt"] as? String == "packed", "\(algorithm.name)")
        #expect(checked["chainedToRoot"] as? Bool == true, "\(algorithm.name)")
        #expect(checked["challenge"] as? String == challengeHex)

        let id = try #require(registration["id"] as? String)
        let authenticate = try CLIRunner.run([
            "authenticate", "--device", device, "--rp", "example.org", "--credential", id, "--challenge",
            challenge, "--json",
        ])
        try #require(authenticate.status == 0, "\(algorithm.name): \(authenticate.stderr)")
        let registrationFile = directory.appendingPathComponent("\(algorithm.name)-reg.json")
        let assertionFile = directory.appendingPathComponent("\(algorithm.name)-auth.json")
        try Data(register.stdout.utf8).write(to: registrationFile)
        try Data(authenticate.stdout.utf8).write(to: assertionFile)
        let signed = try PythonFido2.runScript(
            python, "check_assertion_cose.py", [registrationFile.path], input: authenticate.stdout)
        #expect(signed["verified"] as? Bool == true, "\(algorithm.name)")
        #expect(signed["class"] as? String == algorithm.pythonClass)
        #expect(signed["alg"] as? Int == algorithm.cose)

        let verify = try CLIRunner.run([
            "verify", "--registration", registrationFile.path, "--assertion", assertionFile.path, "--trust-root", root,
            "--rp", "example.org", "--challenge", challenge, "--json",
        ])
        #expect(verify.status == 0, "\(algorithm.name): \(verify.stderr)")
        #expect(try verify.object()["verified"] as? Bool == true, "\(algorithm.name)")

        // A tampered signature is refused by `verify` (exit 2).
        var tampered = try authenticate.object()
        var tamperedResponse = tampered["response"] as? [String: Any] ?? [:]
        let signature = try #require(tamperedResponse["signature"] as? String)
        tamperedResponse["signature"] = String(signature.dropLast(2)) + (signature.hasSuffix("AA") ? "BA" : "AA")
        tampered["response"] = tamperedResponse
        try JSONSerialization.data(withJSONObject: tampered).write(to: assertionFile)
        let refused = try CLIRunner.run([
            "verify", "--registration", registrationFile.path, "--assertion", assertionFile.path, "--json",
        ])
        #expect(refused.status == 2, "\(algorithm.name): \(refused.stdout)")
    }
}
