import Foundation
import TestProcesses

#if canImport(Glibc)
    import Glibc
#endif

/// A private PAM world for one test: the built pam_securitykey.so in a test-only PAM service
/// (/etc/pam.d/securitykey-test-UUID, written and removed by the bed; the tests run as root),
/// Debian's pamtester, authorization files in the work directory, and virtual keys.
final class PAMBed: VirtualKeyBed {
    /// The module under test (SwiftPM's name for the dynamic product).
    static var module: String { products.appendingPathComponent("libpam_securitykey.so").path }

    /// The service name, unique to this bed.
    let service = "securitykey-test-\(UUID().uuidString.lowercased())"
    var serviceFile: String { "/etc/pam.d/\(service)" }

    init() throws {
        try super.init(prefix: "securitykey-pam")
        // The work directory is read by the module as root; it must not be writable by others.
        chmod(work.path, 0o755)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: serviceFile)
    }

    /// Writes the service: `lines` (each `auth CONTROL MODULE ARGS`) under a comment; the
    /// module is named by `MODULE`, replaced by the module under test.
    func writeService(_ lines: [String]) throws {
        let text = (["# written by the PAMSecurityKeyTests for one test; removed after it"] + lines)
            .map { $0.replacingOccurrences(of: "MODULE", with: Self.module) }.joined(separator: "\n") + "\n"
        try text.write(toFile: serviceFile, atomically: true, encoding: .utf8)
    }

    /// The service with this module alone, `required`, with `arguments`.
    func writeModule(_ arguments: [String]) throws {
        try writeService(["auth required MODULE " + arguments.joined(separator: " ")])
    }

    /// Writes an authorization file in the work directory, mode `mode`, owned by root; returns its path.
    @discardableResult
    func writeAuthFile(_ name: String, _ text: String, mode: mode_t = 0o644) throws -> String {
        try text.write(toFile: path(name), atomically: true, encoding: .utf8)
        chmod(path(name), mode)
        return path(name)
    }

    /// `pamtester -v SERVICE USER authenticate` with `input` on standard input (what the
    /// conversation reads: PINs, Enter), bounded in time.
    func pamtester(user: String = "root", input: String = "", environment extra: [String: String] = [:])
        throws -> ProcessOutput
    {
        try run(["/usr/bin/pamtester", "-v", service, user, "authenticate"], input: input, environment: extra)
    }

    /// Runs `arguments` with `input` on standard input, this bed's environment and `extra`.
    func run(_ arguments: [String], input: String = "", environment extra: [String: String] = [:])
        throws -> ProcessOutput
    {
        try TestProcess.run(
            arguments[0], Array(arguments.dropFirst()), input: Data(input.utf8),
            environment: environment.merging(extra) { $1 }, timeout: .seconds(90))
    }

    /// `securitykey pam enroll --user USER --origin ORIGIN --device DEVICE` with `options`;
    /// the line it prints.
    func enroll(user: String = "root", origin: String = PAMBed.origin, device: String, options: [String] = [])
        throws -> String
    {
        let output = try securitykey(
            ["pam", "enroll", "--user", user, "--origin", origin, "--device", device, "--pin-stdin"] + options)
        guard output.status == 0 else { throw BedError("pam enroll failed: \(output.stderrText)") }
        return output.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The origin the tests enrol for.
    static let origin = "pam://securitykey-test"
}
