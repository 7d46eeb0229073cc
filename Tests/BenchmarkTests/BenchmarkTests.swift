import Foundation
import TestProcesses
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The benchmark's statistics and its driver line protocol, through the built binaries.
/// No test looks at how fast anything is.
@Suite struct BenchmarkTests {
    /// Median and nearest-rank 95th percentile, worked out by hand from the definitions
    /// (median: the middle value, or the mean of the two middle values; p95: the ⌈0.95·n⌉-th smallest).
    static let statsCases: [(values: [Int], median: String, p95: String)] = [
        ([7], "7.0", "7.0"),
        ([5, 1, 4, 2, 3], "3.0", "5.0"),  // ⌈4.75⌉ = 5th
        ([40, 10, 30, 20], "25.0", "40.0"),  // ⌈3.8⌉ = 4th
        (Array(1...20), "10.5", "19.0"),  // ⌈19⌉ = 19th
        (Array((1...100).reversed()), "50.5", "95.0"),  // ⌈95⌉ = 95th
        ([3, 3, 1, 1000], "3.0", "1000.0"),
    ]

    @Test(arguments: statsCases)
    func statistics(_ example: (values: [Int], median: String, p95: String)) async throws {
        let output = try await Subprocess.runToEnd(
            Binaries.bench, ["stats"] + example.values.map(String.init))
        let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        #expect(object?["n"] as? Int == example.values.count)
        #expect((object?["median"] as? NSNumber).map { "\($0.doubleValue)" } == example.median)
        #expect((object?["p95"] as? NSNumber).map { "\($0.doubleValue)" } == example.p95)
    }

    @Test func statisticsRejectsNonNumbers() async throws {
        let status = try await Subprocess.status(Binaries.bench, ["stats", "1", "x"])
        #expect(status == 2)
    }

    /// Our driver against a virtual key on UDP: the ready line, one result line per request with
    /// as many latencies as asked, an error line for a bad request, exit 0 on quit.
    @Test func ourDriverSpeaksTheLineProtocol() async throws {
        try await Self.checkDriver(
            executable: Binaries.bench, arguments: ["drive", "--device"], localSuffix: "?local=0")
    }

    /// python-fido2's driver (scripts/bench/fido2_driver.py) speaks the same protocol.
    @Test func pythonDriverSpeaksTheLineProtocol() async throws {
        guard let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"], !python.isEmpty else {
            Issue.record(
                "SECURITYKEY_PYTHON is not set: point it at a Python with python-fido2 (make pydeps).")
            return
        }
        try await Self.checkDriver(
            executable: URL(fileURLWithPath: python),
            arguments: [
                Binaries.repository.appendingPathComponent("scripts/bench/fido2_driver.py").path, "--device",
            ],
            localSuffix: "")
    }

    /// Our fleet probe against two keys of one `virtual serve --count 2` process: the warm line,
    /// then R round times with both keys found in each, then exit 0 once told to quit.
    @Test func ourFleetProbeSpeaksTheFleetProtocol() async throws {
        try await Self.checkFleetHost(
            executable: Binaries.bench, arguments: ["fleet-probe", "--repeat", "3"])
    }

    /// python-fido2's fleet host (scripts/bench/fido2_fleet.py) speaks the same protocol.
    @Test func pythonFleetHostSpeaksTheFleetProtocol() async throws {
        guard let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"], !python.isEmpty else {
            Issue.record(
                "SECURITYKEY_PYTHON is not set: point it at a Python with python-fido2 (make pydeps).")
            return
        }
        try await Self.checkFleetHost(
            executable: URL(fileURLWithPath: python),
            arguments: [
                Binaries.repository.appendingPathComponent("scripts/bench/fido2_fleet.py").path, "--repeat",
                "3",
            ])
    }

    static func checkFleetHost(executable: URL, arguments: [String]) async throws {
        let transcript = try await TestProcess.onThread { () throws -> [String] in
            let keys = try Subprocess(
                Binaries.securityKey,
                ["virtual", "serve", "--udp", "127.0.0.1:0", "--count", "2", "--latency", "5", "--json"])
            defer { keys.terminate() }
            var uris: [String] = []
            for _ in 0..<2 {
                let line = try keys.readLine()
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                uris.append(try #require(object?["uri"] as? String, "key line: \(line)"))
            }
            let host = try Subprocess(executable, arguments + uris)
            defer { host.terminate() }
            var lines = [try host.readLine(), try host.readLine()]
            try host.write("quit")
            lines.append("exit \(host.waitForExit())")
            return lines
        }
        try #require(transcript.count == 3)
        #expect(transcript[0] == #"{"warm":true}"# || transcript[0] == #"{"warm": true}"#, "\(transcript[0])")
        let result =
            (try? JSONSerialization.jsonObject(with: Data(transcript[1].utf8))) as? [String: Any] ?? [:]
        let times = result["times_ns"] as? [NSNumber] ?? []
        #expect(times.count == 3, "\(transcript[1])")
        #expect(times.allSatisfy { $0.int64Value > 0 })
        #expect((result["found"] as? [NSNumber])?.map(\.intValue) == [2, 2, 2], "\(transcript[1])")
        #expect((result["cpu_ns"] as? NSNumber).map { $0.int64Value >= 0 } == true)
        #expect(transcript[2] == "exit 0")
    }

    static func checkDriver(executable: URL, arguments: [String], localSuffix: String) async throws {
        let transcript = try await TestProcess.onThread { () throws -> [String] in
            let port = try freeUDPPort()
            let key = try Subprocess(
                Binaries.securityKey,
                ["virtual", "serve", "--udp", "127.0.0.1:\(port)", "--presence", "auto", "--json"])
            defer { key.terminate() }
            _ = try key.readLine()
            let driver = try Subprocess(executable, arguments + ["udp:127.0.0.1:\(port)\(localSuffix)"])
            defer { driver.terminate() }
            var lines = [try driver.readLine()]
            for request in ["getinfo 2", "mc 2", "ga 3", "bogus 1"] {
                try driver.write(request)
                lines.append(try driver.readLine())
            }
            try driver.write("quit")
            lines.append("exit \(driver.waitForExit())")
            return lines
        }
        try #require(transcript.count == 6)
        let objects = transcript.prefix(5).map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
        }
        #expect(objects[0]["ready"] as? Bool == true, "ready line: \(transcript[0])")
        for (index, (op, count)) in [("getinfo", 2), ("mc", 2), ("ga", 3)].enumerated() {
            let object = objects[index + 1]
            #expect(object["op"] as? String == op, "\(transcript[index + 1])")
            let latencies = object["latencies_ns"] as? [NSNumber] ?? []
            #expect(latencies.count == count, "\(transcript[index + 1])")
            #expect(latencies.allSatisfy { $0.int64Value > 0 })
            #expect((object["cpu_ns"] as? NSNumber).map { $0.int64Value >= 0 } == true)
        }
        #expect(objects[4]["op"] as? String == "bogus")
        #expect(objects[4]["error"] is String)
        #expect(transcript[5] == "exit 0")
    }

    static func freeUDPPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw SubprocessError("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0 else { throw SubprocessError("bind failed") }
        return UInt16(bigEndian: address.sin_port)
    }
}

/// Where the binaries under test are: beside the test bundle in the build directory.
enum Binaries {
    static func find(_ name: String) -> URL {
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return repository.appendingPathComponent(".build/debug/\(name)")
    }

    static var bench: URL { find("securitykey-bench") }
    static var securityKey: URL { find("securitykey") }
    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }
}

struct SubprocessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A child process spoken to in lines; every blocking call has a deadline and runs on a thread
/// of its own (`TestProcess.onThread`), never on the cooperative pool.
final class Subprocess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffered: [UInt8] = []

    init(_ executable: URL, _ arguments: [String]) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    func write(_ line: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// The next line of output, waiting at most `timeout` seconds.
    func readLine(timeout: Double = 60) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        let fd = output.fileHandleForReading.fileDescriptor
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                defer { buffered.removeSubrange(...newline) }
                return String(decoding: buffered[..<newline], as: UTF8.self)
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw SubprocessError("no line within \(timeout) s") }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(remaining * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { throw SubprocessError("the process closed its output") }
            buffered += chunk[..<count]
        }
    }

    /// Waits up to 10 s for the process to exit; its status, or -1 if it had to be killed.
    func waitForExit() -> Int32 {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        guard !process.isRunning else {
            kill(process.processIdentifier, SIGKILL)
            return -1
        }
        return process.terminationStatus
    }

    func terminate() {
        if process.isRunning { process.terminate() }
        _ = waitForExit()
    }

    /// Runs `executable` to the end and returns its standard output.
    static func runToEnd(_ executable: URL, _ arguments: [String]) async throws -> String {
        try await TestProcess.onThread {
            let child = try Subprocess(executable, arguments)
            var lines: [String] = []
            while let line = try? child.readLine(timeout: 30) { lines.append(line) }
            _ = child.waitForExit()
            return lines.joined(separator: "\n")
        }
    }

    /// Runs `executable` to the end and returns its exit status.
    static func status(_ executable: URL, _ arguments: [String]) async throws -> Int32 {
        try await TestProcess.onThread { try Subprocess(executable, arguments).waitForExit() }
    }
}
