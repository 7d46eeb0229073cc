import Foundation

#if canImport(Glibc)
    import Glibc
#endif

public struct BedError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What a test needs around the built programs: a work directory, virtual keys served by the
/// built `securitykey` over CTAPHID/UDP or to vpcd (in a private PC/SC bed), and commands that
/// leave daemons behind run to their end. OpenSSH's and PAM's test beds build on it.
open class VirtualKeyBed {
    public let work: URL
    /// What every command runs with on top of this process's environment (the UDP endpoints,
    /// the PC/SC bed's socket, and what a subclass adds).
    public var environment: [String: String] = [:]
    /// Processes started for the test, ended with it.
    public var background: [BackgroundProcess] = []
    private var pcscBed: URL?

    /// The build directory holding the test bundle, `securitykey` and the libraries.
    public static let products: URL = {
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            if FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("securitykey").path) {
                return directory
            }
            directory = directory.deletingLastPathComponent()
        }
        return repository.appendingPathComponent(".build/debug")
    }()
    public static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    public static var securitykey: URL { products.appendingPathComponent("securitykey") }

    /// A bed with a new work directory named after `prefix`.
    public init(prefix: String) throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    }

    deinit { stop() }

    /// Ends what the bed started (its processes, then its PC/SC bed) and removes its work
    /// directory; `deinit` does it when a test did not. Bounded (a child that ignores SIGTERM is
    /// killed, not waited for), but it blocks: an asynchronous test calls it through
    /// `TestProcess.onThread`.
    public final func stop() {
        for process in background.reversed() { TestProcess.stop(process.process) }
        if let pcscBed {
            _ = try? detached(
                [Self.repository.appendingPathComponent("scripts/pcsc-testbed.sh").path, "stop", pcscBed.path],
                name: "pcsc-stop", timeout: 30)
            self.pcscBed = nil
        }
        try? FileManager.default.removeItem(at: work)
    }

    public func path(_ name: String) -> String { work.appendingPathComponent(name).path }

    // MARK: Virtual keys

    /// Serves a virtual key (`securitykey virtual serve ARGUMENTS --json`) and returns the JSON
    /// line it prints once it serves.
    @discardableResult
    public func serve(_ arguments: [String], name: String) throws -> [String: Any] {
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

    /// Serves a CTAP 2.1 key (a U2F-only one when `extra` says `--ctap1-only`) over UDP on a
    /// free port and adds it to SECURITYKEY_UDP; returns its URI.
    @discardableResult
    public func serveUDP(name: String, extra: [String] = []) throws -> String {
        let port = try Self.freePort(type: SOCK_DGRAM)
        let profile = extra.contains("--ctap1-only") ? [] : ["--profile", "ctap21"]
        let json = try serve(["--udp", "127.0.0.1:\(port)"] + profile + extra, name: name)
        guard let uri = (json["uri"] as? String) ?? (json["address"] as? String).map({ "udp:\($0)" }) else {
            throw BedError("virtual serve printed no address: \(json)")
        }
        let endpoints = [environment["SECURITYKEY_UDP"], uri].compactMap { $0 }.filter { !$0.isEmpty }
        environment["SECURITYKEY_UDP"] = endpoints.joined(separator: ",")
        return uri
    }

    /// Stops the key served as `name`.
    public func stopServing(_ name: String) {
        for process in background where process.out.lastPathComponent == "\(name).out" {
            TestProcess.stop(process.process)
        }
    }

    /// Starts a private PC/SC bed (scripts/pcsc-testbed.sh) whose pcscd every later command
    /// reaches, and serves a CTAP 2.1 key to its first vpcd reader; returns the reader's URI.
    public func servePCSC(extra: [String] = []) throws -> String {
        let uri = try startPCSCBed()
        try serve(["--pcsc", "--profile", "ctap21"] + extra, name: "pcsc-key")
        // The card is seen once pcscd has polled the reader.
        for _ in 0..<100 {
            let list = try securitykey(["list", "--json"])
            if list.stdoutText.contains(uri) { return uri }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw BedError("the virtual card did not appear in \(uri)")
    }

    /// Starts a private PC/SC bed (scripts/pcsc-testbed.sh) whose pcscd every later command
    /// reaches, with no card served yet; returns the URI of its first vpcd reader.
    public func startPCSCBed() throws -> String {
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
        return "pcsc:\(readers.first.map(String.init) ?? "Virtual PCD 00 00")"
    }

    /// SIGKILLs the PC/SC bed's pcscd (a crash; `restart` starts it again), or SIGKILLs it if
    /// it runs and starts it again on the same socket, ports and readers (`restart`): the cards
    /// served to vpcd reconnect by themselves.
    public func pcscd(_ action: PCSCDAction) throws {
        guard let pcscBed else { throw BedError("no PC/SC bed was started (servePCSC)") }
        let script = Self.repository.appendingPathComponent("scripts/pcsc-testbed.sh")
        let done = try detached([script.path, action.rawValue, pcscBed.path], name: "pcsc-\(action.rawValue)", timeout: 60)
        guard done.status == 0 else { throw BedError("pcsc-testbed.sh \(action.rawValue) failed: \(done.stderr)") }
    }

    /// What ``pcscd(_:)`` does to the bed's pcscd.
    public enum PCSCDAction: String, Sendable {
        case kill, restart
    }

    /// Runs the built `securitykey` with this bed's environment.
    public func securitykey(_ arguments: [String]) throws -> ProcessOutput {
        try TestProcess.run(Self.securitykey, arguments, environment: environment, timeout: .seconds(60))
    }

    /// PIN attempts left on the key at `device`, as the key reports them.
    public func pinRetries(_ device: String) throws -> Int? {
        let status = try securitykey(["pin", "status", "--device", device, "--json"])
        let json = try? JSONSerialization.jsonObject(with: status.stdout) as? [String: Any]
        return json?["pinRetries"] as? Int
    }

    /// Runs `arguments` to its end, output in files, for a command that leaves a daemon behind
    /// (the PC/SC bed's pcscd): Foundation's Process learns of its child's exit when a socket
    /// the child inherits is closed, so a daemon that inherited it would make the command never
    /// end for Process. An outer shell keeps that socket while the command runs in a subshell
    /// that closed every descriptor above 2; `timeout` bounds it, so a hang is a failure.
    public func detached(_ arguments: [String], name: String, timeout seconds: Int) throws -> (
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

    // MARK: Sockets

    /// A TCP or UDP port on 127.0.0.1 the kernel had free just now.
    public static func freePort(type: __socket_type) throws -> Int {
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
    public static func accepts(port: Int) -> Bool {
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

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }}
