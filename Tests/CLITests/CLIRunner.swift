import Foundation
import Synchronization
#if canImport(Glibc)
    import Glibc
#endif
import TestProcesses
import Testing

/// Runs the built `securitykey` binary as a subprocess.
struct CLIRunner {
    /// What one run produced.
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        /// Standard output parsed as JSON.
        func json() throws -> Any {
            try JSONSerialization.jsonObject(with: Data(stdout.utf8))
        }

        func object() throws -> [String: Any] {
            guard let o = try json() as? [String: Any] else {
                throw CLITestError("stdout is not a JSON object: \(stdout)")
            }
            return o
        }
    }

    /// The binary: beside the test bundle in the build directory.
    static var binary: URL {
        var dir = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("securitykey")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return here.appendingPathComponent(".build/debug/securitykey")
    }

    /// Runs `securitykey virtual serve ARGUMENTS` for the duration of `body`, then stops it with
    /// SIGTERM; returns what `body` returned and the server's exit status.
    static func withVirtualKey<T>(
        _ arguments: [String], standardError: FileHandle = .nullDevice, _ body: () throws -> T
    ) throws -> (result: T, status: Int32) {
        let serve = Process()
        serve.executableURL = binary
        serve.arguments = ["virtual", "serve"] + arguments
        serve.standardOutput = FileHandle.nullDevice
        serve.standardError = standardError
        try serve.run()
        defer {
            if serve.isRunning { serve.terminate() }
            serve.waitUntilExit()
        }
        let result = try body()
        serve.terminate()
        serve.waitUntilExit()
        return (result, serve.terminationStatus)
    }

    /// Ports handed out by ``freeUDPPort(count:)`` in this process.
    private static let handedOut = Mutex<Set<Int>>([])

    /// A UDP port on 127.0.0.1 that nothing is bound to now and that this process never handed
    /// out before (suites run in parallel: ports derived from the pid collided); with `count`
    /// above 1, the first of that many consecutive such ports (`virtual serve --count`).
    static func freeUDPPort(count: Int = 1) -> Int {
        for _ in 0..<500 {
            let base = Int.random(in: 20000...(60000 - count))
            let ports = Array(base..<(base + count))
            let fresh = handedOut.withLock { taken -> Bool in
                guard !ports.contains(where: taken.contains) else { return false }
                taken.formUnion(ports)
                return true
            }
            if fresh && ports.allSatisfy(isFreeUDP) { return base }
        }
        return Int.random(in: 20000...(60000 - count))
    }

    /// Whether a UDP socket can bind 127.0.0.1:`port` now.
    static func isFreeUDP(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Waits (up to 5 s) until `info --device device` answers: a served key is up.
    static func waitUntilServed(_ device: String) {
        for _ in 0..<50 {
            if (try? run(["info", "--device", device]).status) == 0 { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    /// Runs the tool with `arguments`, writing `input` to its standard input.
    static func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) throws
        -> Result
    {
        try run(executable: binary, arguments, input: input, environment: environment)
    }

    /// A CLI process started in the background, its standard output and error in files.
    typealias Background = BackgroundProcess

    /// Starts `securitykey ARGUMENTS` without waiting for it, with `environment` on top of this
    /// process's and its output in `work`/`name`.out and .err; standard input is empty.
    static func start(_ arguments: [String], name: String, work: URL, environment: [String: String] = [:])
        throws -> Background
    {
        try TestProcess.start(binary, arguments, name: name, work: work, environment: environment)
    }

    /// Runs `executable` with `arguments`, `input` on its standard input and `environment` on
    /// top of this process's; the status and both outputs.
    static func run(
        executable: URL, _ arguments: [String], input: String? = nil, environment: [String: String] = [:]
    ) throws -> Result {
        let output = try TestProcess.run(
            executable, arguments, input: input.map { Data($0.utf8) }, environment: environment)
        return Result(status: output.status, stdout: output.stdoutText, stderr: output.stderrText)
    }
}

struct CLITestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
