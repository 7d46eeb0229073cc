import Foundation
import Testing

/// A private PC/SC test bed (scripts/pcsc-testbed.sh) with `securitykey virtual serve --pcsc`
/// running in it. Each test gets its own pcscd on its own vpcd ports, so the CLI's tests never
/// share readers with other suites that run at the same time.
final class PCSCBed {
    let directory: URL
    let environment: [String: String]
    /// The reader the virtual key is served to, as a device URI.
    let device: String
    /// The other reader, which stays empty.
    let emptyDevice: String
    private var serve: Process?
    private var serveOutput: Pipe?

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    private init(directory: URL, environment: [String: String]) {
        self.directory = directory
        self.environment = environment
        let readers = (environment["SECURITYKEY_VPCD_READERS"] ?? "Virtual PCD 00 00|Virtual PCD 00 01")
            .split(separator: "|").map(String.init)
        device = "pcsc:\(readers.first ?? "Virtual PCD 00 00")"
        emptyDevice = "pcsc:\(readers.dropFirst().first ?? "Virtual PCD 00 01")"
    }

    /// One bed at a time in this process: beds started together could pick the same vpcd
    /// ports, and a card served for one test then showed up in another's bed.
    private static let oneAtATime = NSLock()

    /// Starts a bed, runs `body`, and stops everything it started.
    static func with(_ body: (PCSCBed) throws -> Void) throws {
        oneAtATime.lock()
        defer { oneAtATime.unlock() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "securitykey-cli-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = repository.appendingPathComponent("scripts/pcsc-testbed.sh").path
        let start = try Self.shell([script, "start", directory.appendingPathComponent("bed").path])
        guard start.status == 0 else {
            Issue.record(
                "The PC/SC test bed did not start (needs pcscd, vsmartcard-vpcd and root for unshare; `make test` runs it): \(start.stderr)"
            )
            return
        }
        defer { _ = try? Self.shell([script, "stop", directory.appendingPathComponent("bed").path]) }
        var environment: [String: String] = [:]
        for line in start.stdout.split(separator: "\n") {
            guard line.hasPrefix("export "), let eq = line.firstIndex(of: "=") else { continue }
            let key = String(line[line.index(line.startIndex, offsetBy: 7)..<eq])
            environment[key] = String(line[line.index(after: eq)...]).trimmingCharacters(
                in: CharacterSet(charactersIn: "'"))
        }
        let bed = PCSCBed(directory: directory, environment: environment)
        defer { bed.stopServing() }
        try body(bed)
    }

    /// Runs the CLI inside the bed.
    func run(_ arguments: [String], input: String? = nil) throws -> CLIRunner.Result {
        try CLIRunner.run(arguments, input: input, environment: environment)
    }

    /// Starts `securitykey virtual serve --pcsc` with `arguments` and waits until `list` sees the key.
    func serve(_ arguments: [String] = []) throws {
        let process = Process()
        process.executableURL = CLIRunner.binary
        process.arguments = ["virtual", "serve", "--pcsc", "--json"] + arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        serve = process
        serveOutput = out
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            guard process.isRunning else {
                throw CLITestError("virtual serve exited with \(process.terminationStatus)")
            }
            let list = try run(["list", "--json"])
            if let keys = try? list.json() as? [[String: Any]],
                keys.contains(where: { $0["uri"] as? String == device })
            {
                return
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw CLITestError("the virtual key did not appear in `securitykey list` within 15 s")
    }

    /// Sends SIGTERM to the served key and returns its exit status and its one JSON line.
    @discardableResult
    func stopServing() -> (status: Int32, line: [String: Any]?) {
        guard let serve, let serveOutput else { return (0, nil) }
        self.serve = nil
        if serve.isRunning { serve.terminate() }
        serve.waitUntilExit()
        let text = String(decoding: serveOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let line = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        return (serve.terminationStatus, line)
    }

    /// SIGKILLs the bed's pcscd and starts it again on the same socket and vpcd ports (a
    /// crashed pcscd restarted by systemd); the served card reconnects by itself.
    func restartPCSCD() throws {
        let script = Self.repository.appendingPathComponent("scripts/pcsc-testbed.sh").path
        let restarted = try Self.shell([script, "restart", directory.appendingPathComponent("bed").path])
        guard restarted.status == 0 else { throw CLITestError("pcscd did not restart: \(restarted.stderr)") }
    }

    /// A path inside the bed's directory.
    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Runs a command with its output in files, not pipes: the bed's pcscd outlives the script
    /// and must not hold a pipe the test waits on.
    private static func shell(_ arguments: [String]) throws -> CLIRunner.Result {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent(
            "securitykey-shell-\(UUID())")
        let outURL = base.appendingPathExtension("out"), errURL = base.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        // Close every inherited descriptor above 2 first: pcscd, which the bed script leaves
        // running, must not hold one that Foundation watches for the script's exit.
        let closeAll =
            "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done; exec \"$@\""
        process.arguments = ["-c", closeAll, "sh"] + arguments
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return CLIRunner.Result(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
    }
}
