import Foundation
import Testing
import TestProcesses

#if canImport(Glibc)
    import Glibc
#endif

/// A private OpenSSH world for one test: a work directory, Debian's ssh-keygen, ssh, ssh-agent
/// and an sshd of its own on 127.0.0.1, the built libsecuritykey-sk.so as provider, and virtual
/// keys served by the built `securitykey` over CTAPHID/UDP or to vpcd.
final class OpenSSHBed: VirtualKeyBed {
    /// The provider under test.
    static var provider: String { products.appendingPathComponent("libsecuritykey-sk.so").path }

    init() throws {
        try super.init(prefix: "securitykey-ssh")
        // sshd's privilege separation directory.
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
    }

    deinit {
        stopSSHD()
        if let agentPID { kill(agentPID, SIGTERM) }
    }

    // MARK: PINs through SSH_ASKPASS

    /// Makes OpenSSH ask `pin`'s script for every PIN (SSH_ASKPASS_REQUIRE=force), counting the prompts.
    func answerPINs(with pin: String) throws {
        let script = path("askpass.sh")
        try """
        #!/bin/sh
        echo "$1" >> \(path("askpass.log"))
        echo '\(pin)'
        """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        environment["SSH_ASKPASS"] = script
        environment["SSH_ASKPASS_REQUIRE"] = "force"
        environment["DISPLAY"] = ":0"
    }

    /// The PIN prompts OpenSSH showed through SSH_ASKPASS so far (it also shows "Confirm user
    /// presence" notices there).
    var pinPrompts: [String] {
        ((try? String(contentsOfFile: path("askpass.log"), encoding: .utf8)) ?? "").split(separator: "\n").map(
            String.init
        ).filter { $0.contains("PIN") }
    }

    // MARK: OpenSSH

    /// Runs an OpenSSH command with this bed's environment, bounded in time.
    func openSSH(_ tool: String, _ arguments: [String], timeout: Duration = .seconds(90)) throws -> ProcessOutput {
        try TestProcess.run(
            tool.hasPrefix("/") ? tool : "/usr/bin/\(tool)", arguments, environment: environment, timeout: timeout)
    }

    /// `ssh-keygen -t TYPE -w PROVIDER -f FILE -N ""` with `options` (`-O ...`).
    func enroll(_ type: String, file: String, options: [String] = []) throws -> ProcessOutput {
        try openSSH(
            "ssh-keygen", ["-t", type, "-w", Self.provider, "-f", path(file), "-N", ""] + options.flatMap { ["-O", $0] })
    }

    /// `ssh-keygen -K` (download resident keys) run in the new directory `directory`, where it
    /// writes the key files.
    func downloadResidentKeys(into directory: String) throws -> ProcessOutput {
        try FileManager.default.createDirectory(atPath: path(directory), withIntermediateDirectories: true)
        return try openSSH(
            "/bin/sh",
            ["-c", "cd \"$1\" && exec ssh-keygen -K -w \"$2\" -N ''", "sh", path(directory), Self.provider])
    }

    /// The public key line of `file`.pub.
    func publicKey(_ file: String) throws -> String {
        try String(contentsOfFile: path("\(file).pub"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The type and base64 blob of a public key line (its comment left out).
    static func keyBlob(_ line: String) -> String {
        line.split(separator: " ").prefix(2).joined(separator: " ")
    }

    private(set) var sshdPort = 0

    /// Starts sshd on 127.0.0.1 with its own host key and `authorizedKeys` as the only
    /// authorized keys (run as root: the tests do).
    func startSSHD(authorizedKeys: [String]) throws {
        try (authorizedKeys.joined(separator: "\n") + "\n").write(
            toFile: path("authorized_keys"), atomically: true, encoding: .utf8)
        if !FileManager.default.fileExists(atPath: path("host_key")) {
            let host = try openSSH("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path("host_key")])
            guard host.status == 0 else { throw BedError("host key: \(host.stderrText)") }
        }
        sshdPort = try Self.freePort(type: SOCK_STREAM)
        try """
        Port \(sshdPort)
        ListenAddress 127.0.0.1
        HostKey \(path("host_key"))
        PidFile \(path("sshd.pid"))
        AuthorizedKeysFile \(path("authorized_keys"))
        StrictModes no
        UsePAM no
        PermitRootLogin yes
        PasswordAuthentication no
        KbdInteractiveAuthentication no
        PubkeyAuthentication yes
        PubkeyAcceptedAlgorithms sk-ecdsa-sha2-nistp256@openssh.com,sk-ssh-ed25519@openssh.com
        LogLevel VERBOSE
        """.write(toFile: path("sshd_config"), atomically: true, encoding: .utf8)
        // sshd closes every inherited descriptor, which Foundation's Process takes for its
        // exit (and then waits for it): it runs as a daemon, ended by PID (see startAgent).
        stopSSHD()
        let sshd = try openSSH(
            "/usr/sbin/sshd", ["-f", path("sshd_config"), "-E", path("sshd.log")], timeout: .seconds(30))
        guard sshd.status == 0 else { throw BedError("sshd did not start: \(sshd.stderrText) \(sshdLog)") }
        for _ in 0..<100 {
            if Self.accepts(port: sshdPort) { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw BedError("sshd does not listen: \(sshdLog)")
    }

    private func stopSSHD() {
        guard let text = try? String(contentsOfFile: path("sshd.pid"), encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return }
        kill(pid, SIGTERM)
        try? FileManager.default.removeItem(atPath: path("sshd.pid"))
        for _ in 0..<100 where kill(pid, 0) == 0 { Thread.sleep(forTimeInterval: 0.02) }
    }

    /// `ssh` to the bed's sshd as root, running `echo logged-in`, with `options` (`-o ...`).
    func login(options: [String]) throws -> ProcessOutput {
        try openSSH(
            "ssh",
            [
                "-F", "/dev/null", "-p", "\(sshdPort)", "-o", "StrictHostKeyChecking=no",
                "-o", "UserKnownHostsFile=/dev/null", "-o", "PasswordAuthentication=no",
                "-o", "KbdInteractiveAuthentication=no", "-o", "ConnectTimeout=20",
            ] + options.flatMap { ["-o", $0] } + ["root@127.0.0.1", "echo logged-in"])
    }

    /// `login` with the key file `file` through the provider.
    func login(with file: String) throws -> ProcessOutput {
        try login(options: ["IdentitiesOnly=yes", "IdentityFile=\(path(file))", "SecurityKeyProvider=\(Self.provider)"])
    }

    private var agentPID: Int32?

    /// Starts `ssh-agent -D` allowing the provider (`-P`, which the agent matches against the
    /// provider's resolved path: the build directory is reached through a symlink), bound to a
    /// socket in the work directory; later commands reach it through SSH_AUTH_SOCK. A shell
    /// stands between: the agent closes every inherited descriptor, which Foundation's Process
    /// takes for its child's exit (and then waits for it), so the child is the shell, which
    /// keeps them. In the foreground (`-D`) the agent prints "echo Agent pid N;", not
    /// SSH_AGENT_PID; it is ended by that PID.
    func startAgent() throws {
        let socket = path("agent.sock"), output = path("agent.out")
        let shell = try TestProcess.start(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "ssh-agent -D -a \"$1\" -P \"$2\" > \"$3\" 2>&1; :", "sh", socket, Self.resolvedProvider, output],
            name: "agent-shell", work: work, environment: environment)
        background.append(shell)
        for _ in 0..<200 {
            let printed = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let line = printed.split(separator: "\n").first(where: { $0.hasPrefix("echo Agent pid ") }),
                let pid = Int32(line.dropFirst("echo Agent pid ".count).trimmingCharacters(in: CharacterSet(charactersIn: ";"))),
                FileManager.default.fileExists(atPath: socket)
            {
                agentPID = pid
                environment["SSH_AUTH_SOCK"] = socket
                return
            }
            guard shell.process.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw BedError("ssh-agent did not start: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
    }

    /// The provider's path with every symlink resolved, as ssh-agent compares it with `-P`.
    static var resolvedProvider: String {
        guard let resolved = realpath(provider, nil) else { return provider }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// What sshd logged so far.
    var sshdLog: String { (try? String(contentsOfFile: path("sshd.log"), encoding: .utf8)) ?? "" }


}
