import Foundation
import TestProcesses
import Testing

/// A private message bus with securitykeyd on it and virtual keys over UDP: a `dbus-daemon`
/// started by the test (not forked, stopped by PID), `securitykey virtual serve --udp` keys,
/// and `securitykeyd --address` serving them. Everything started is stopped by PID.
final class DaemonBed: @unchecked Sendable {
    let directory: URL
    let address: String
    let ports: [Int]
    private var processes: [Process] = []
    /// The running securitykeyd (a new one after ``restartDaemon(killing:)``).
    private(set) var daemon: Process
    let daemonLog: URL
    /// securitykeyd's arguments and what its environment adds, for a restart.
    private let daemonArguments: [String]
    private let daemonEnvironment: [String: String]

    struct BedError: Error, CustomStringConvertible {
        var description: String
    }

    /// The build directory holding the binaries (beside the test bundle).
    static var binaries: URL {
        var dir = Bundle.main.bundleURL
        for _ in 0..<4 {
            if FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("securitykeyd").path) {
                return dir
            }
            dir = dir.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug")
    }

    /// `arguments` are added to securitykeyd's and `keyArguments` to each virtual key's; a
    /// daemon that refuses the test's own calls (`refusesUs`) is ready once it answers
    /// ListDevices with SecurityError. With `pcsc` the daemon serves PC/SC readers too (of the
    /// pcscd `environment` names), and is ready once it lists `keys + 1` devices.
    init(
        keys: Int, pin: String?, policy: String? = nil, arguments: [String] = [], keyArguments: [String] = [],
        refusesUs: Bool = false, pcsc: Bool = false, environment: [String: String] = [:]
    )
        throws
    {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("daemon-bed-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let bus = Process()
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        bus.arguments = [
            "--session", "--nofork", "--nopidfile", "--address=unix:path=\(directory.path)/bus",
            "--print-address=1",
        ]
        let printed = Pipe()
        bus.standardOutput = printed
        bus.standardError = FileHandle.nullDevice
        try bus.run()
        processes.append(bus)
        // The address line says the bus listens.
        let line = printed.fileHandleForReading.availableDataLine()
        guard line.hasPrefix("unix:") else {
            bus.terminate()
            throw BedError(description: "dbus-daemon printed no address")
        }
        address = line

        let base = 30000 + Int(ProcessInfo.processInfo.processIdentifier % 10000) * 2
        ports = (0..<keys).map { base + $0 * 7 }
        for port in ports {
            let key = Process()
            key.executableURL = Self.binaries.appendingPathComponent("securitykey")
            key.arguments =
                ["virtual", "serve", "--udp", "127.0.0.1:\(port)"] + (pin.map { ["--pin", $0] } ?? [])
                // CTAP 2.0 unless a test names a profile: with a PIN, registering then needs it.
                + (keyArguments.contains("--profile") ? [] : ["--profile", "ctap20"]) + keyArguments
            key.standardOutput = FileHandle.nullDevice
            key.standardError = FileHandle.nullDevice
            try key.run()
            processes.append(key)
        }
        daemonLog = directory.appendingPathComponent("daemon.log")
        _ = FileManager.default.createFile(atPath: daemonLog.path, contents: nil)
        daemonArguments =
            ["--address", address, "-vv"] + (pcsc ? [] : ["--udp-only"])
            + ports.flatMap { ["--udp", "127.0.0.1:\($0)"] } + (policy.map { ["--policy", $0] } ?? []) + arguments
        daemonEnvironment = environment
        daemon = Process()
        do {
            daemon = try launchDaemon()
            try waitUntilListed(keys + (pcsc ? 1 : 0), refusesUs: refusesUs)
        } catch {
            stop()
            throw error
        }
    }

    /// Starts securitykeyd with the bed's arguments, its output appended to the log.
    private func launchDaemon() throws -> Process {
        let daemon = Process()
        daemon.executableURL = Self.binaries.appendingPathComponent("securitykeyd")
        daemon.arguments = daemonArguments
        if !daemonEnvironment.isEmpty {
            daemon.environment = ProcessInfo.processInfo.environment.merging(daemonEnvironment) { $1 }
        }
        daemon.standardOutput = FileHandle.nullDevice
        let log = try FileHandle(forWritingTo: daemonLog)
        try log.seekToEnd()
        daemon.standardError = log
        try daemon.run()
        processes.append(daemon)
        return daemon
    }

    /// Waits (30 s at most) until the daemon lists `count` keys (or refuses us, when it should).
    func waitUntilListed(_ count: Int, refusesUs: Bool = false) throws {
        let deadline = Date(timeIntervalSinceNow: 30)
        while Date() < deadline {
            if let listed = try? busctl([
                "call", "org.securitykey.Daemon1", "/org/securitykey/Daemon1",
                "org.securitykey.Daemon1", "ListDevices",
            ]),
                refusesUs
                    ? listed.stderr.contains("SecurityError") || listed.stderr.contains("not served")
                        || listed.stderr.contains("session")
                    : listed.status == 0
                        && (listed.stdout.hasPrefix("aa{sv} \(count) ")
                            || listed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "aa{sv} \(count)")
            {
                return
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        throw BedError(description: "securitykeyd did not list \(count) keys in time")
    }

    /// Ends the daemon (SIGKILL with `killing`, as a crash; SIGTERM otherwise) and starts a new
    /// one with the same arguments on the same bus; returns the old one's termination status.
    @discardableResult
    func restartDaemon(killing: Bool) throws -> Int32 {
        if daemon.isRunning {
            if killing { kill(daemon.processIdentifier, SIGKILL) } else { daemon.terminate() }
        }
        daemon.waitUntilExit()
        let status = daemon.terminationStatus
        daemon = try launchDaemon()
        return status
    }

    /// Stops the daemon alone (SIGTERM), leaving the bus and the keys.
    func stopDaemon() {
        guard daemon.isRunning else { return }
        daemon.terminate()
        daemon.waitUntilExit()
    }

    /// Stops the daemon with SIGTERM (returning its exit status), then the keys and the bus.
    @discardableResult
    func stop() -> Int32 {
        var status: Int32 = -1
        if daemon.isRunning {
            daemon.terminate()
            daemon.waitUntilExit()
            status = daemon.terminationStatus
        }
        for process in processes.reversed() where process.isRunning {
            if process === processes.first {
                // dbus-daemon handles SIGTERM with a signal handler, and a child spawned from a
                // test thread may inherit a mask that blocks it: SIGKILL, by PID.
                kill(process.processIdentifier, SIGKILL)
            } else {
                process.terminate()
            }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
        return status
    }

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ executable: String, _ arguments: [String], input: String? = nil) throws -> Output {
        let output = try TestProcess.run(executable, arguments, input: input.map { Data($0.utf8) })
        return Output(status: output.status, stdout: output.stdoutText, stderr: output.stderrText)
    }

    /// busctl (systemd's independent D-Bus client) on the bed's bus.
    func busctl(_ arguments: [String]) throws -> Output {
        try Self.run("/usr/bin/busctl", ["--address=\(address)", "--timeout=60"] + arguments)
    }

    /// Calls a daemon method with busctl.
    func call(_ method: String, _ signature: String = "", _ arguments: [String] = []) throws -> Output {
        try busctl(
            [
                "call", "org.securitykey.Daemon1", "/org/securitykey/Daemon1", "org.securitykey.Daemon1",
                method,
            ]
                + (signature.isEmpty ? [] : [signature] + arguments))
    }

    /// gdbus (GLib's D-Bus client, libglib2.0-bin) calling a daemon method; arguments are
    /// strings (gdbus takes them as given when they are no GVariant text).
    func gdbus(_ method: String, _ arguments: [String] = []) throws -> Output {
        try Self.run(
            "/usr/bin/gdbus",
            [
                "call", "--address", address, "--dest", "org.securitykey.Daemon1", "--timeout", "60",
                "--object-path", "/org/securitykey/Daemon1", "--method", "org.securitykey.Daemon1.\(method)",
            ] + arguments)
    }

    /// The python jeepney client (Tests/DaemonTests/Python/daemon_client.py).
    func client(_ python: String, _ arguments: [String], input: String? = nil) throws -> Output {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Python/daemon_client.py").path
        return try Self.run(python, [script, address] + arguments, input: input)
    }
}

extension FileHandle {
    /// Reads up to the first newline (bounded at 4 KiB), without the newline.
    func availableDataLine() -> String {
        var bytes: [UInt8] = []
        while bytes.count < 4096 {
            let chunk = readData(ofLength: 1)
            guard let byte = chunk.first else { break }
            if byte == 0x0A { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The interpreter named by SECURITYKEY_PYTHON, or a recorded failure.
func pythonInterpreter(sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    guard let path = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"], !path.isEmpty else {
        Issue.record(
            "SECURITYKEY_PYTHON is not set (a python with python-fido2 and jeepney).",
            sourceLocation: sourceLocation)
        return nil
    }
    return path
}

func jsonObject(_ text: String) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
}
