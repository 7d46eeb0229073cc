import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `make demo` (scripts/demo.sh) as an ordinary user: no private PC/SC bed without root, so it
/// says why in one sentence and runs the ceremony over CTAPHID-over-UDP instead.
@Suite struct DemoScriptTests {
    @Test func theDemoRunsAsAnUnprivilegedUser() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let demo = root.appendingPathComponent("scripts/demo.sh").path
        var command = ["/bin/bash", demo]
        if geteuid() == 0 {
            // Drop to nobody, as a user without root would run it.
            let setpriv = "/usr/bin/setpriv"
            try #require(
                FileManager.default.isExecutableFile(atPath: setpriv), "setpriv (util-linux) is missing")
            command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] + command
        }
        let result = try CLIRunner.run(
            executable: URL(fileURLWithPath: command[0]), Array(command.dropFirst()),
            environment: ["SECURITYKEY_BIN": CLIRunner.binary.path, "HOME": "/nonexistent"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(!result.stderr.contains("unbound variable"), "\(result.stderr)")
        #expect(!result.stderr.contains("unshare failed"), "\(result.stderr)")
        // The reason in one sentence (from the bed), then the fallback, then the whole ceremony.
        #expect(result.stdout.contains("No PC/SC bed: "), "\(result.stdout)")
        #expect(result.stdout.contains("over CTAPHID-over-UDP"), "\(result.stdout)")
        #expect(result.stdout.contains("Assertion: the signature verifies"), "\(result.stdout)")
        #expect(result.stdout.contains("Done: the key was registered"), "\(result.stdout)")
    }
}
