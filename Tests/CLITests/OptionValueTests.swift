import Foundation
import Testing

/// Values that start with "-" are values: a base64url credential ID whose first character is
/// "-" (its first byte is 0xF8–0xFB), and COSE algorithm numbers (-7, -257).
struct OptionValueTests {
    @Test func dashLeadingIDsAndNegativeAlgorithmsAreValues() throws {
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        _ = try CLIRunner.withVirtualKey(["--udp", "127.0.0.1:\(port)"]) {
            CLIRunner.waitUntilServed(device)
            // -7 is ES256 (COSE, RFC 9053): the key makes an ES256 credential.
            let made = try CLIRunner.run(
                ["register", "--device", device, "--rp", "example.org", "--user", "u", "--alg", "-7", "--json"])
            try #require(made.status == 0, "\(made.stderr)")
            let response = try made.object()["response"] as? [String: Any]
            #expect(response?["publicKeyAlgorithm"] as? Int == -7)

            // An ID starting with "-" reaches the key, which does not hold it (not exit 64,
            // "missing value").
            let unknown = "-" + String(repeating: "A", count: 42)
            let signIn = try CLIRunner.run(
                ["authenticate", "--device", device, "--rp", "example.org", "--credential", unknown, "--json"])
            #expect(signIn.status != 64, "\(signIn.stderr)")
            #expect(!signIn.stderr.contains("Missing value"), "\(signIn.stderr)")
            let excluded = try CLIRunner.run([
                "register", "--device", device, "--rp", "example.org", "--user", "v", "--exclude", unknown, "--json",
            ])
            #expect(excluded.status == 0, "\(excluded.stderr)")
            // Positional IDs too: the key is asked and does not hold it (not a usage error).
            let delete = try CLIRunner.run(["credentials", "delete", unknown, "--yes", "--device", device, "--json"])
            #expect(delete.status != 64, "\(delete.stderr)")
            #expect(!delete.stderr.contains("Unknown option"), "\(delete.stderr)")
        }
    }

    /// A usage error found while parsing is a JSON error object under --json too (code
    /// `usage`, exit 64), like every other failure; without --json, text only.
    @Test func parseErrorsAreJSONUnderJSON() throws {
        let missing = try CLIRunner.run(["register", "--json"])
        #expect(missing.status == 64)
        let error = try missing.object()["error"] as? [String: Any]
        #expect(error?["code"] as? String == "usage")
        #expect((error?["message"] as? String)?.contains("--rp") == true)
        let text = try CLIRunner.run(["register"])
        #expect(text.status == 64)
        #expect(text.stdout.isEmpty)
        #expect(text.stderr.contains("--rp"))
    }
}
