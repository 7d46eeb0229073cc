#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import Transport

/// Where the orchestrator finds the programs it starts.
struct BenchEnvironment {
    /// The repository root (holds scripts/bench and scripts/pcsc-testbed.sh).
    var repository: String
    /// The `securitykey` binary next to this one.
    var securityKeyBinary: String
    /// This binary (our driver is its `drive` subcommand).
    var benchBinary: String
    /// The Python with python-fido2, if any.
    var python: String?
    /// libfido2's driver, if built.
    var libfido2Driver: String?
    /// Where child processes' standard error goes.
    var logDirectory: String

    static func discover() throws(BenchError) -> BenchEnvironment {
        let fileManager = FileManager.default
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        let ownPath =
            (try? fileManager.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? executable.path
        let binDirectory = URL(fileURLWithPath: ownPath).deletingLastPathComponent().path
        var candidates = [fileManager.currentDirectoryPath]
        var directory = URL(fileURLWithPath: binDirectory)
        for _ in 0..<5 {
            candidates.append(directory.path)
            directory.deleteLastPathComponent()
        }
        guard
            let repository = candidates.first(where: {
                fileManager.fileExists(atPath: "\($0)/scripts/bench/fido2_driver.py")
            })
        else {
            throw BenchError(
                .usage,
                "Run securitykey-bench from the repository root (scripts/bench/fido2_driver.py not found).")
        }
        let securityKey = "\(binDirectory)/securitykey"
        guard fileManager.isExecutableFile(atPath: securityKey) else {
            throw BenchError(
                .usage, "\(securityKey) is missing; build it with the same configuration (make bench does).")
        }
        let environment = ProcessInfo.processInfo.environment
        var python = environment["SECURITYKEY_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
        if python == nil, fileManager.isExecutableFile(atPath: "\(repository)/.venv/bin/python3") {
            python = "\(repository)/.venv/bin/python3"
        }
        let libfido2 = "\(repository)/.build/bench/fido2-udp-driver"
        let logDirectory = "\(repository)/.build/bench/logs"
        do { try fileManager.createDirectory(atPath: logDirectory, withIntermediateDirectories: true) } catch
        {
            throw BenchError(.system, "Cannot create \(logDirectory): \(error.localizedDescription)")
        }
        return BenchEnvironment(
            repository: repository, securityKeyBinary: securityKey, benchBinary: ownPath, python: python,
            libfido2Driver: fileManager.isExecutableFile(atPath: libfido2) ? libfido2 : nil,
            logDirectory: logDirectory)
    }

    /// A free UDP port on 127.0.0.1 (the kernel picks one; it is released at once for the key to bind).
    static func freeUDPPort() throws(BenchError) -> UInt16 {
        let socket = try boundLoopbackUDPSocket()
        close(socket.fd)
        return socket.port
    }

    /// A UDP socket bound to 127.0.0.1 on a port the kernel picks, and that port.
    static func boundLoopbackUDPSocket() throws(BenchError) -> (fd: Int32, port: UInt16) {
        do throws(TransportError) {
            let socket = try UDPSocket.open()
            do throws(TransportError) {
                try socket.bind(to: .ipv4Loopback)
                return (socket.descriptor, try socket.boundPort())
            } catch {
                socket.close()
                throw error
            }
        } catch {
            throw BenchError(.system, error.message)
        }
    }
}

/// A private PC/SC test bed (scripts/pcsc-testbed.sh) or the one the benchmark already runs in.
final class PCSCBed {
    /// Environment for clients and virtual cards.
    let environment: [String: String]
    /// The vpcd reader names, in order; reader `i` takes a card on port `vpcdPort + i`.
    let readers: [String]
    /// The vpcd port of the first reader.
    let vpcdPort: UInt16
    private let ownDirectory: String?
    private let script: String

    /// Uses the bed named by SECURITYKEY_PCSC_TESTBED, or starts one with `readerPairs` vpcd devices.
    init(repository: String, readerPairs: Int, name: String) throws(BenchError) {
        script = "\(repository)/scripts/pcsc-testbed.sh"
        let inherited = ProcessInfo.processInfo.environment
        var environment: [String: String]
        if readerPairs == 1, inherited["SECURITYKEY_PCSC_TESTBED"] != nil {
            environment = inherited.filter {
                $0.key.hasPrefix("SECURITYKEY_") || $0.key == "PCSCLITE_CSOCK_NAME"
            }
            ownDirectory = nil
        } else {
            guard getuid() == 0 else {
                throw BenchError(
                    .usage,
                    "A PC/SC test bed needs root (unshare -m); run as root or under scripts/pcsc-testbed.sh run --."
                )
            }
            let directory = "\(repository)/.run/bench-\(name)-\(getpid())"
            InterruptCleanup.register(bed: directory, script: script)
            let output = try Self.runScript(
                script, ["start", directory], environment: ["PCSC_TESTBED_VPCD_DEVICES": String(readerPairs)])
            environment = [:]
            for line in output.split(separator: "\n") {
                guard line.hasPrefix("export "), let equals = line.firstIndex(of: "=") else { continue }
                let key = String(line[line.index(line.startIndex, offsetBy: 7)..<equals])
                var value = String(line[line.index(after: equals)...])
                if value.hasPrefix("'"), value.hasSuffix("'"), value.count >= 2 {
                    value = String(value.dropFirst().dropLast())
                }
                environment[key] = value
            }
            ownDirectory = directory
        }
        guard let port = environment["SECURITYKEY_VPCD_PORT"].flatMap({ UInt16($0) }),
            let names = environment["SECURITYKEY_VPCD_READERS"], environment["PCSCLITE_CSOCK_NAME"] != nil
        else {
            if let ownDirectory { _ = try? Self.runScript(script, ["stop", ownDirectory], environment: [:]) }
            throw BenchError(.child, "The PC/SC test bed did not report its socket, port and readers.")
        }
        self.environment = environment
        vpcdPort = port
        readers = names.split(separator: "|").map(String.init)
    }

    /// Stops the bed if this object started it.
    func stop() {
        guard let ownDirectory else { return }
        _ = try? Self.runScript(script, ["stop", ownDirectory], environment: [:])
        try? FileManager.default.removeItem(atPath: ownDirectory)
        InterruptCleanup.unregister(bed: ownDirectory)
    }

    private static func runScript(_ script: String, _ arguments: [String], environment: [String: String])
        throws(BenchError) -> String
    {
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        let errorPath = "\(NSTemporaryDirectory())/securitykey-bench-testbed-\(getpid()).err"
        defer { unlink(errorPath) }
        let process = try SpawnedProcess(
            executable: script, arguments: arguments, environment: env, errorPath: errorPath)
        process.closeInput()
        // The bed's pcscd runs in the background with its output redirected, so standard output
        // reaches end of file when the script exits.
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            var descriptor = pollfd(fd: process.output, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 30_000) > 0 else {
                process.signal(SIGTERM)
                throw BenchError(
                    .timeout, "scripts/pcsc-testbed.sh \(arguments[0]) did not finish within 30 s.")
            }
            let count = chunk.withUnsafeMutableBytes { read(process.output, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            text += chunk[..<count]
        }
        let status = process.waitForExit(within: .seconds(30))
        guard status == 0 else {
            let reason = (try? String(contentsOfFile: errorPath, encoding: .utf8))?.split(separator: "\n")
                .last
            throw BenchError(
                .child,
                "scripts/pcsc-testbed.sh \(arguments[0]) failed: \(reason.map(String.init) ?? "exit \(status.map(String.init) ?? "unknown")")"
            )
        }
        return String(decoding: text, as: UTF8.self)
    }
}
