import Foundation
import TestProcesses
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Linux-PAM's words for the results (pam_strerror), as pamtester prints them.
enum PAMText {
    static let success = "successfully authenticated"
    static let authError = "Authentication failure"
    static let authInfoUnavailable = "Authentication service cannot retrieve authentication info"
    static let userUnknown = "User not known to the underlying authentication module"
    static let serviceError = "Error in service module"
}

/// Debian's pamtester with the built pam_securitykey.so in a test-only PAM service, against
/// virtual keys served by the built `securitykey` over CTAPHID/UDP and to vpcd. The tests write
/// /etc/pam.d and need root (CI runs as root); elsewhere they are skipped.
@Suite(.serialized, .enabled(if: geteuid() == 0, "writes a PAM service under /etc/pam.d: needs root"))
struct PAMModuleTests {
    /// A bed with one UDP key and the line `securitykey pam enroll` printed for it.
    func enrolled(_ keyOptions: [String] = [], enrollOptions: [String] = [], pinInput: String = "")
        throws -> (bed: PAMBed, key: String, line: String)
    {
        let bed = try PAMBed()
        let key = try bed.serveUDP(name: "key", extra: ["--state", bed.path("key.state")] + keyOptions)
        let output = try bed.run(
            [PAMBed.securitykey.path, "pam", "enroll", "--user", "root", "--origin", PAMBed.origin, "--device", key, "--pin-stdin"]
                + enrollOptions, input: pinInput)
        guard output.status == 0 else { throw BedError("pam enroll failed: \(output.stderrText)") }
        return (bed, key, output.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func moduleLine(_ bed: PAMBed, file: String, key: String, _ more: [String] = []) -> [String] {
        ["authfile=\(file)", "origin=\(PAMBed.origin)", "udp=\(key)", "timeout=20"] + more
    }

    @Test func enrolledKeyAuthenticatesWithCue() throws {
        let (bed, key, line) = try enrolled()
        #expect(line.hasPrefix("root:"))
        #expect(line.hasSuffix(",es256,+presence"))
        let file = try bed.writeAuthFile("u2f_keys", line + "\n")
        try bed.writeModule(moduleLine(bed, file: file, key: key, ["cue", "[cue_prompt=Touch the test key now]"]))
        let result = try bed.pamtester()
        #expect(result.status == 0, "\(result.stdoutText) \(result.stderrText)")
        #expect(result.stdoutText.contains(PAMText.success))
        #expect((result.stdoutText + result.stderrText).contains("Touch the test key now"))
    }

    @Test func refusedTouchIsAuthError() throws {
        let (bed, _, line) = try enrolled()
        let file = try bed.writeAuthFile("u2f_keys", line + "\n")
        bed.stopServing("key")
        // The same key (its state), now refusing every touch.
        let denying = try bed.serveUDP(name: "denying", extra: ["--presence", "deny", "--state", bed.path("key.state")])
        try bed.writeModule(moduleLine(bed, file: file, key: denying))
        let result = try bed.pamtester()
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authError), "\(result.stderrText)")
    }

    @Test func credentialOfAnotherKeyIsAuthError() throws {
        let (bed, key, line) = try enrolled()
        let other = try bed.serveUDP(name: "other")
        // The credential is on `key`; only `other` is searched.
        let file = try bed.writeAuthFile("u2f_keys", line + "\n")
        try bed.writeModule(moduleLine(bed, file: file, key: other))
        let result = try bed.pamtester()
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authError), "\(result.stderrText)")
        _ = key
    }

    /// The key holds the credential, but the line lists another public key: the assertion's
    /// signature must not verify.
    @Test func wrongPublicKeyIsAuthError() throws {
        let (bed, key, line) = try enrolled()
        let other = try bed.serveUDP(name: "other")
        let otherLine = try bed.enroll(device: other)
        let fields = line.split(separator: ",").map(String.init)
        let otherFields = otherLine.split(separator: ",").map(String.init)
        let forged = ([fields[0], otherFields[1]] + fields[2...]).joined(separator: ",")
        let file = try bed.writeAuthFile("u2f_keys", forged + "\n")
        try bed.writeModule(moduleLine(bed, file: file, key: key, ["debug", "debug_file=\(try bed.writeAuthFile("debug.log", ""))"]))
        let result = try bed.pamtester()
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authError), "\(result.stderrText)")
        let log = try String(contentsOfFile: bed.path("debug.log"), encoding: .utf8)
        #expect(log.contains("signature does not verify"), "\(log)")
    }

    @Test func noKeyPresentIsAuthInfoUnavailable() throws {
        let (bed, key, line) = try enrolled()
        bed.stopServing("key")
        let file = try bed.writeAuthFile("u2f_keys", line + "\n")
        try bed.writeModule(moduleLine(bed, file: file, key: key))
        let result = try bed.pamtester()
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authInfoUnavailable), "\(result.stderrText)")
    }

    /// A user the file does not list: PAM_USER_UNKNOWN, or with nouserok PAM_IGNORE (the stack
    /// goes on to the next module, which here says so).
    @Test func unlistedUserBothWays() throws {
        let (bed, key, line) = try enrolled()
        let file = try bed.writeAuthFile("u2f_keys", line.replacingOccurrences(of: "root:", with: "someone-else:") + "\n")
        try bed.writeModule(moduleLine(bed, file: file, key: key))
        let unknown = try bed.pamtester()
        #expect(unknown.status != 0)
        #expect(unknown.stderrText.contains(PAMText.userUnknown), "\(unknown.stderrText)")

        try bed.writeService([
            "auth [success=done ignore=ignore default=die] MODULE " + moduleLine(bed, file: file, key: key, ["nouserok"]).joined(separator: " "),
            "auth required pam_exec.so stdout /bin/echo the-module-was-ignored",
        ])
        let ignored = try bed.pamtester()
        #expect(ignored.status == 0, "\(ignored.stderrText)")
        #expect(ignored.stdoutText.contains("the-module-was-ignored"), "\(ignored.stdoutText)")
        // Listed again, the same stack ends at the module, which succeeds.
        try bed.writeAuthFile("u2f_keys", line + "\n")
        let listed = try bed.pamtester()
        #expect(listed.status == 0, "\(listed.stderrText)")
        #expect(!listed.stdoutText.contains("the-module-was-ignored"))
    }

    /// `+pin`: the PIN asked through the conversation (pamtester reads it from standard input);
    /// a wrong one is PAM_AUTH_ERR having spent exactly one attempt, and no second prompt.
    @Test func pinThroughTheConversation() throws {
        let (bed, key, line) = try enrolled(["--pin", "246810"], enrollOptions: ["--pin"], pinInput: "246810\n")
        #expect(line.hasSuffix(",es256,+presence+pin"))
        let file = try bed.writeAuthFile("u2f_keys", line + "\n")
        try bed.writeModule(moduleLine(bed, file: file, key: key))
        let before = try bed.pinRetries(key)
        let wrong = try bed.pamtester(input: "135791\n135791\n")
        #expect(wrong.status != 0)
        #expect(wrong.stderrText.contains(PAMText.authError), "\(wrong.stderrText)")
        let prompts = (wrong.stdoutText + wrong.stderrText).components(separatedBy: "PIN for the security key: ").count - 1
        #expect(prompts == 1)
        #expect((wrong.stdoutText + wrong.stderrText).contains("Wrong PIN"))
        let after = try bed.pinRetries(key)
        #expect(before.map { $0 - 1 } == after)

        let right = try bed.pamtester(input: "246810\n")
        #expect(right.status == 0, "\(right.stdoutText) \(right.stderrText)")
        #expect((right.stdoutText + right.stderrText).contains("PIN for the security key"))
        #expect(try bed.pinRetries(key) == before)
    }

    @Test func malformedFileRefusedNamingIt() throws {
        let (bed, key, line) = try enrolled()
        let file = try bed.writeAuthFile("u2f_keys", line + "\nroot:this-is-not,a-credential\n")
        let debug = try bed.writeAuthFile("debug.log", "")
        try bed.writeModule(moduleLine(bed, file: file, key: key, ["debug", "debug_file=\(debug)", "nouserok"]))
        let result = try bed.pamtester()
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authInfoUnavailable), "\(result.stderrText)")
        let log = try String(contentsOfFile: debug, encoding: .utf8)
        #expect(log.contains(file) && log.contains("line 2"), "\(log)")
    }

    @Test(arguments: [0o666, 0o646] as [mode_t])
    func writableByOthersRefused(mode: mode_t) throws {
        let (bed, key, line) = try enrolled()
        let file = try bed.writeAuthFile("u2f_keys", line + "\n", mode: mode)
        let debug = try bed.writeAuthFile("debug.log", "")
        try bed.writeModule(moduleLine(bed, file: file, key: key, ["debug", "debug_file=\(debug)"]))
        let result = try bed.pamtester()
        #expect(result.stderrText.contains(PAMText.authInfoUnavailable), "\(result.stderrText)")
        #expect(try String(contentsOfFile: debug, encoding: .utf8).contains("anyone may write"))
        // The same file, writable by its owner only, is read.
        chmod(file, 0o644)
        #expect(try bed.pamtester().status == 0)
    }

    @Test func symbolicLinkRefused() throws {
        let (bed, key, line) = try enrolled()
        let target = try bed.writeAuthFile("real_keys", line + "\n")
        try FileManager.default.createSymbolicLink(atPath: bed.path("u2f_keys"), withDestinationPath: target)
        try bed.writeModule(moduleLine(bed, file: bed.path("u2f_keys"), key: key))
        let result = try bed.pamtester()
        #expect(result.stderrText.contains(PAMText.authInfoUnavailable), "\(result.stderrText)")
    }

    @Test func unsupportedOptionRefused() throws {
        let (bed, key, line) = try enrolled()
        let file = try bed.writeAuthFile("u2f_keys", line + "\n")
        try bed.writeModule(moduleLine(bed, file: file, key: key, ["alwaysok"]))
        let result = try bed.pamtester()
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.serviceError), "\(result.stderrText)")
    }

    /// The module inside a setuid program run by another user, whose environment asks for a
    /// wire trace, lists the only key as a UDP endpoint and sets the Swift backtracer: none of
    /// it is honoured (the key is not searched, nothing is traced), although the PAM line says
    /// `environment`. The same command run by root itself, not setuid, honours all of it.
    @Test func hostileEnvironmentInASetuidProgram() throws {
        let (bed, key, line) = try enrolled()
        let file = try bed.writeAuthFile("u2f_keys", line + "\n")
        try bed.writeModule(["authfile=\(file)", "origin=\(PAMBed.origin)", "timeout=20", "environment"])
        let hostile = [
            "SECURITYKEY_UDP": key, "SECURITYKEY_TRACE": "1",
            "SWIFT_BACKTRACE": "enable=yes,interactive=no",
        ]
        // Root itself: the environment is honoured.
        let direct = try bed.pamtester(environment: hostile)
        #expect(direct.status == 0, "\(direct.stderrText)")
        #expect(direct.stderrText.contains("pam_securitykey:"), "the trace is on")

        let setuid = bed.path("pamtester-setuid")
        try FileManager.default.copyItem(atPath: "/usr/bin/pamtester", toPath: setuid)
        chown(setuid, 0, 0)
        chmod(setuid, 0o4755)
        let result = try bed.run(
            ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", setuid, "-v", bed.service, "root", "authenticate"],
            environment: hostile)
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authInfoUnavailable), "\(result.stderrText)")
        #expect(!result.stderrText.contains("pam_securitykey:"), "no trace: \(result.stderrText)")
        // The Swift runtime reads SWIFT_BACKTRACE when the module loads: in the privileged
        // process it refuses to turn the backtracer on, and says so; root's own run turned it
        // on without a word.
        #expect(result.stderrText.contains("backtrace-on-crash is not supported for privileged executables"))
        #expect(!direct.stderrText.contains("backtrace-on-crash is not supported"))
    }

    /// `sshformat`: an OpenSSH key file ssh-keygen made through our provider authenticates; a
    /// key file of another key does not.
    @Test(arguments: ["ecdsa-sk", "ed25519-sk"])
    func openSSHKeyFile(type: String) throws {
        let bed = try PAMBed()
        let key = try bed.serveUDP(name: "key")
        let provider = PAMBed.products.appendingPathComponent("libsecuritykey-sk.so").path
        let made = try bed.run(["/usr/bin/ssh-keygen", "-t", type, "-w", provider, "-N", "", "-f", bed.path("id_sk")])
        #expect(made.status == 0, "\(made.stderrText)")
        try bed.writeModule(["sshformat", "authfile=\(bed.path("id_sk"))", "udp=\(key)", "timeout=20"])
        let result = try bed.pamtester()
        #expect(result.status == 0, "\(result.stdoutText) \(result.stderrText)")
        let other = try bed.serveUDP(name: "other")
        try bed.writeModule(["sshformat", "authfile=\(bed.path("id_sk"))", "udp=\(other)", "timeout=20"])
        #expect(try bed.pamtester().stderrText.contains(PAMText.authError))
    }

    @Test func overPCSC() throws {
        let bed = try PAMBed()
        let reader = try bed.servePCSC()
        let line = try bed.enroll(device: reader)
        let file = try bed.writeAuthFile("u2f_keys", line + "\n")
        try bed.writeModule(["authfile=\(file)", "origin=\(PAMBed.origin)", "timeout=30"])
        let result = try bed.pamtester()
        #expect(result.status == 0, "\(result.stdoutText) \(result.stderrText)")
    }
}
