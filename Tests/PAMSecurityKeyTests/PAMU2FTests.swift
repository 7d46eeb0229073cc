import Foundation
import TestProcesses
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// pamtester with the built pam_securitykey.so against a virtual key that speaks only CTAP1/U2F
/// (`securitykey virtual serve --ctap1-only --udp`): pam-u2f's old-style lines and es256
/// new-style lines authenticate with a touch; a line that asks for the PIN or user
/// verification, which U2F cannot give, is refused and logged.
@Suite(.serialized, .enabled(if: geteuid() == 0, "writes a PAM service under /etc/pam.d: needs root"))
struct PAMU2FTests {
    /// A bed with one U2F-only UDP key and the new-style line `securitykey pam enroll` printed for it.
    func enrolled() throws -> (bed: PAMBed, key: String, line: String) {
        let bed = try PAMBed()
        let key = try bed.serveUDP(name: "key", extra: ["--ctap1-only"])
        return (bed, key, try bed.enroll(device: key))
    }

    /// The module line of these tests, with `debug` into the work directory's debug.log.
    func writeModule(_ bed: PAMBed, file: String, key: String) throws {
        let debug = try bed.writeAuthFile("debug.log", "")
        try bed.writeModule(["authfile=\(file)", "origin=\(PAMBed.origin)", "udp=\(key)", "timeout=20", "debug", "debug_file=\(debug)"])
    }

    func debugLog(_ bed: PAMBed) throws -> String {
        try String(contentsOfFile: bed.path("debug.log"), encoding: .utf8)
    }

    /// pam-u2f's old-style (libu2f-host) credential for the same key handle and public key as
    /// the new-style `entry` (`HANDLE,KEY,es256,+presence`, standard base64, KEY the 64-byte
    /// x‖y): the key handle in websafe base64 without padding, the key as the hex of the
    /// uncompressed point 04‖x‖y (pam_u2f(8), "Old format").
    static func oldStyle(_ entry: Substring) throws -> String {
        let fields = entry.split(separator: ",")
        let handle = try #require(Data(base64Encoded: String(fields[0])))
        let key = try #require(Data(base64Encoded: String(fields[1])))
        try #require(key.count == 64)
        let websafe = handle.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return websafe + "," + ([0x04] + key).map { String(format: "%02x", $0) }.joined()
    }

    @Test func newStyleES256LineAuthenticates() throws {
        let (bed, key, line) = try enrolled()
        #expect(line.hasPrefix("root:"))
        #expect(line.hasSuffix(",es256,+presence"), "\(line)")
        let file = try bed.writeAuthFile("u2f_keys", line + "\n")
        try writeModule(bed, file: file, key: key)
        let result = try bed.pamtester()
        #expect(result.status == 0, "\(result.stdoutText) \(result.stderrText)")
        #expect(result.stdoutText.contains(PAMText.success))
        #expect(try debugLog(bed).contains("asking for a U2F assertion"))
    }

    @Test func oldStyleLineAuthenticates() throws {
        let (bed, key, line) = try enrolled()
        let entry = try #require(line.split(separator: ":").last)
        let file = try bed.writeAuthFile("u2f_keys", "root:" + (try Self.oldStyle(entry)) + "\n")
        try writeModule(bed, file: file, key: key)
        let result = try bed.pamtester()
        #expect(result.status == 0, "\(result.stdoutText) \(result.stderrText)")
        #expect(result.stdoutText.contains(PAMText.success))
    }

    /// A credential of another U2F key (the only key searched does not hold it), and the
    /// key's own key handle with another key's public key (the signature must not verify).
    @Test func wrongCredentialIsAuthError() throws {
        let (bed, key, line) = try enrolled()
        let other = try bed.serveUDP(name: "other", extra: ["--ctap1-only"])
        let otherLine = try bed.enroll(device: other)
        let file = try bed.writeAuthFile("u2f_keys", "root:" + (try Self.oldStyle(otherLine.split(separator: ":")[1])) + "\n")
        try writeModule(bed, file: file, key: key)
        let absent = try bed.pamtester()
        #expect(absent.status != 0)
        #expect(absent.stderrText.contains(PAMText.authError), "\(absent.stderrText)")

        let fields = line.split(separator: ",").map(String.init)
        let otherFields = otherLine.split(separator: ",").map(String.init)
        try bed.writeAuthFile("u2f_keys", ([fields[0], otherFields[1]] + fields[2...]).joined(separator: ",") + "\n")
        let forged = try bed.pamtester()
        #expect(forged.status != 0)
        #expect(forged.stderrText.contains(PAMText.authError), "\(forged.stderrText)")
        #expect(try debugLog(bed).contains("signature does not verify"))
    }

    /// `+pin` or `+verification` on a U2F-only key: refused (PAM_AUTH_ERR, a log line), never
    /// weakened to a touch.
    @Test(arguments: ["+presence+pin", "+presence+verification"])
    func verificationRequiredIsRefused(attributes: String) throws {
        let (bed, key, line) = try enrolled()
        let file = try bed.writeAuthFile("u2f_keys", line.replacingOccurrences(of: ",+presence", with: "," + attributes) + "\n")
        try writeModule(bed, file: file, key: key)
        let result = try bed.pamtester()
        #expect(result.status != 0)
        #expect(result.stderrText.contains(PAMText.authError), "\(result.stderrText)")
        #expect(try debugLog(bed).contains("speaks only U2F"))
    }

    /// `securitykey pam enroll` on a U2F-only key: what U2F cannot make (the PIN or user
    /// verification at every authentication, a resident credential) is refused, not left out.
    @Test(arguments: ["--pin", "--verification", "--resident"])
    func enrollRefusesWhatU2FCannotDo(option: String) throws {
        let bed = try PAMBed()
        let key = try bed.serveUDP(name: "key", extra: ["--ctap1-only"])
        let output = try bed.securitykey(
            ["pam", "enroll", "--user", "root", "--origin", PAMBed.origin, "--device", key, option])
        #expect(output.status != 0)
        #expect(output.stdoutText.isEmpty)
        #expect(output.stderrText.contains("speaks only U2F"), "\(output.stderrText)")
    }
}
