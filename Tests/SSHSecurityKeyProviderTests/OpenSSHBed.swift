import Foundation
import Testing
import TestProcesses

#if canImport(Glibc)
    import Glibc
#endif

struct BedError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A private OpenSSH world for one test: a work directory, Debian's ssh-keygen, ssh, ssh-agent
/// and an sshd of its own on 127.0.0.1, the built libsecuritykey-sk.so as provider, and virtual
/// keys served by the built `securitykey` over CTAPHID/UDP or to vpcd.
final class OpenSSHBed {
    let work: URL
    /// What every OpenSSH command runs with on top of this process's environment (the UDP
    /// endpoints, the PC/SC bed's socket, the askpass PIN).
    var environment: [String: String] = [:]
    private var background: [BackgroundProcess] = []
    private var pcscBed: URL?

    /// The build directory holding the test bundle, `securitykey` and the provider.
    static let products: URL = {
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("libsecuritykey-sk.so").path) {
                return directory
            }
            directory = directory.deletingLastPathComponent()
        }
        return repository.appendingPathComponent(".build/debug")
    }()
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// The provider under test.
    static var provider: String { products.appendingPathComponent("libsecuritykey-sk.so").path }
    static var securitykey: URL { products.appendingPathComponent("securitykey") }

    init() throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("securitykey-ssh-\(UUID())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        // sshd's privilege separation directory.
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
    }

    deinit {
        stopSSHD()
        if let agentPID { kill(agentPID, SIGTERM) }
        for process in background.reversed() where process.process.isRunning {
            process.process.terminate()
            process.process.waitUntilExit()
        }
        if let pcscBed {
            _ = try? detached(
                [Self.repository.appendingPathComponent("scripts/pcsc-testbed.sh").path, "stop", pcscBed.path],
                name: "pcsc-stop", timeout: 30)
        }
        try? FileManager.default.removeItem(at: work)
    }

    func path(_ name: String) -> String { work.appendingPathComponent(name).path }

    // MARK: Virtual keys

    /// Serves a virtual key (`securitykey virtual serve ARGUMENTS --json`) and returns the JSON
    /// line it prints once it serves.
    @discardableResult
    func serve(_ arguments: [String], name: String) throws -> [String: Any] {
        let process = try TestProcess.start(
            Self.securitykey, ["virtual", "serve", "--json"] + arguments, name: name, work: work,
            environment: environment)
        background.append(process)
        for _ in 0..<200 {
            if let line = process.stdout.split(separator: "\n").first,
                let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            {
                return json
            }
            guard process.process.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw BedError("virtual serve \(arguments) did not start: \(process.stderr)")
    }

    /// Serves a CTAP 2.1 key over UDP on a free port and adds it to SECURITYKEY_UDP; returns its URI.
    @discardableResult
    func serveUDP(name: String, extra: [String] = []) throws -> String {
        let port = try Self.freePort(type: SOCK_DGRAM)
        let json = try serve(["--udp", "127.0.0.1:\(port)", "--profile", "ctap21"] + extra, name: name)
        guard let uri = (json["uri"] as? String) ?? (json["address"] as? String).map({ "udp:\($0)" }) else {
            throw BedError("virtual serve printed no address: \(json)")
        }
        let endpoints = [environment["SECURITYKEY_UDP"], uri].compactMap { $0 }.filter { !$0.isEmpty }
        environment["SECURITYKEY_UDP"] = endpoints.joined(separator: ",")
        return uri
    }

    /// Stops the key served as `name`.
    func stopServing(_ name: String) {
        for process in background where process.out.lastPathComponent == "\(name).out" && process.process.isRunning {
            process.process.terminate()
            process.process.waitUntilExit()
        }
    }

    /// Starts a private PC/SC bed (scripts/pcsc-testbed.sh) whose pcscd every later command
    /// reaches, and serves a CTAP 2.1 key to its first vpcd reader; returns the reader's URI.
    func servePCSC(extra: [String] = []) throws -> String {
        let bed = work.appendingPathComponent("pcsc")
        let script = Self.repository.appendingPathComponent("scripts/pcsc-testbed.sh")
        pcscBed = bed
        let started = try detached([script.path, "start", bed.path], name: "pcsc-start", timeout: 60)
        guard started.status == 0 else {
            throw BedError("the PC/SC test bed did not start (needs root, pcscd, vsmartcard-vpcd): \(started.stderr)")
        }
        for line in started.stdout.split(separator: "\n") where line.hasPrefix("export ") {
            let assignment = line.dropFirst("export ".count)
            guard let equals = assignment.firstIndex(of: "=") else { continue }
            environment[String(assignment[..<equals])] = String(assignment[assignment.index(after: equals)...])
                .trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        }
        let readers = (environment["SECURITYKEY_VPCD_READERS"] ?? "Virtual PCD 00 00").split(separator: "|")
        let uri = "pcsc:\(readers.first.map(String.init) ?? "Virtual PCD 00 00")"
        try serve(["--pcsc", "--profile", "ctap21"] + extra, name: "pcsc-key")
        // The card is seen once pcscd has polled the reader.
        for _ in 0..<100 {
            let list = try securitykey(["list", "--json"])
            if list.stdoutText.contains(uri) { return uri }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw BedError("the virtual card did not appear in \(uri)")
    }

    /// Runs the built `securitykey` with this bed's environment.
    func securitykey(_ arguments: [String]) throws -> ProcessOutput {
        try TestProcess.run(Self.securitykey, arguments, environment: environment, timeout: .seconds(60))
    }

    /// PIN attempts left on the key at `device`, as the key reports them.
    func pinRetries(_ device: String) throws -> Int? {
        let status = try securitykey(["pin", "status", "--device", device, "--json"])
        let json = try? JSONSerialization.jsonObject(with: status.stdout) as? [String: Any]
        return json?["pinRetries"] as? Int
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

    /// Runs `arguments` to its end, output in files, for a command that leaves a daemon behind
    /// (the PC/SC bed's pcscd): Foundation's Process learns of its child's exit when a socket
    /// the child inherits is closed, so a daemon that inherited it would make the command never
    /// end for Process. An outer shell keeps that socket while the command runs in a subshell
    /// that closed every descriptor above 2; `timeout` bounds it, so a hang is a failure.
    func detached(_ arguments: [String], name: String, timeout seconds: Int) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let closeAll = """
            (for fd in $(ls /proc/$BASHPID/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
             exec timeout -k 5 \(seconds) "$@")
            """
        let shell = try TestProcess.start(
            URL(fileURLWithPath: "/bin/bash"), ["-c", closeAll, "bash"] + arguments, name: name, work: work,
            environment: environment)
        let deadline = Date().addingTimeInterval(Double(seconds + 15))
        while shell.process.isRunning {
            guard Date() < deadline else {
                kill(shell.process.processIdentifier, SIGKILL)
                throw BedError("\(arguments.joined(separator: " ")) did not finish in \(seconds) s: \(shell.stderr)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return (shell.process.terminationStatus, shell.stdout, shell.stderr)
    }

    /// What sshd logged so far.
    var sshdLog: String { (try? String(contentsOfFile: path("sshd.log"), encoding: .utf8)) ?? "" }

    // MARK: Sockets

    /// A TCP or UDP port on 127.0.0.1 the kernel had free just now.
    static func freePort(type: __socket_type) throws -> Int {
        let fd = socket(AF_INET, Int32(type.rawValue), 0)
        guard fd >= 0 else { throw BedError("socket failed") }
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw BedError("bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
