import Foundation
import Testing

/// Several keys at once: touch to choose across transports, and several CLI processes each on
/// its own key, as a browser and a user with two terminals would have it.
@Suite(.serialized) struct ChoiceCommandTests {
    /// A `securitykey virtual serve` process logging to a file (-v), stopped when dropped.
    final class ServedKey {
        let process = Process()
        let log: URL

        init(_ arguments: [String], environment: [String: String] = [:], log: URL) throws {
            self.log = log
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            process.executableURL = CLIRunner.binary
            process.arguments = ["virtual", "serve", "-v"] + arguments
            var env = ProcessInfo.processInfo.environment
            for (k, v) in environment { env[k] = v }
            process.environment = env
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: log)
            try process.run()
        }

        var logText: String {
            String(decoding: FileManager.default.contents(atPath: log.path) ?? Data(), as: UTF8.self)
        }

        deinit {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
    }

    static func scratch(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func registerWithoutADeviceUsesTheKeyTouchedAmongTwoCardsAndAUDPKey() throws {
        let work = try Self.scratch("choice")
        defer { try? FileManager.default.removeItem(at: work) }
        try PCSCBed.with { bed in
            guard let vpcd = bed.environment["SECURITYKEY_VPCD_PORT"].flatMap(Int.init) else {
                Issue.record("the bed names no vpcd port")
                return
            }
            let udpPort = CLIRunner.freeUDPPort()
            let readers = (bed.environment["SECURITYKEY_VPCD_READERS"] ?? "").split(separator: "|").map(String.init)
            try #require(readers.count >= 2, "the bed has two readers")
            // Two keys nobody touches, and one card the user touches after a moment.
            let idleCard = try ServedKey(
                ["--pcsc", "127.0.0.1:\(vpcd)", "--presence", "never"], environment: bed.environment,
                log: work.appendingPathComponent("idle-card.log"))
            let touchedCard = try ServedKey(
                ["--pcsc", "127.0.0.1:\(vpcd + 1)", "--presence", "delay:1500"], environment: bed.environment,
                log: work.appendingPathComponent("touched-card.log"))
            let idleUDP = try ServedKey(
                ["--udp", "127.0.0.1:\(udpPort)", "--presence", "never"],
                log: work.appendingPathComponent("idle-udp.log"))
            let udp = ["--udp", "127.0.0.1:\(udpPort)"]
            var listed: [[String: Any]] = []
            for _ in 0..<100 {
                listed = (try? bed.run(["list", "--json"] + udp).json() as? [[String: Any]]) ?? []
                if listed.filter({ $0["aaguid"] is String }).count == 3 { break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            try #require(listed.count == 3, "list sees both cards and the UDP key: \(listed)")
            #expect(Set(listed.compactMap { $0["transport"] as? String }) == ["nfc", "udp"])
            // --device narrows the list to that key; a key that is not there is an error, not a
            // full list.
            let narrowed = try bed.run(["list", "--json", "--device", "pcsc:\(readers[0])"] + udp)
            #expect((try narrowed.json() as? [[String: Any]])?.compactMap { $0["uri"] as? String } == ["pcsc:\(readers[0])"])
            let absent = try bed.run(["list", "--json", "--device", "udp:127.0.0.1:\(udpPort + 1)"])
            #expect(absent.status == 3 || absent.status == 4, "\(absent.stderr)")
            // Administration commands never pick one of several keys for the user.
            let ambiguous = try bed.run(["info", "--json"] + udp)
            #expect(ambiguous.status == 64)
            #expect(ambiguous.stderr.contains("3 security keys are present"))

            let register = try bed.run(["register", "--rp", "example.org", "--user", "u", "--json"] + udp)
            try #require(register.status == 0, "\(register.stderr)")
            #expect(try register.object()["device"] as? String == "pcsc:\(readers[1])")
            #expect(register.stderr.contains("3 security keys found: touch the one to use."))
            #expect(register.stderr.contains("Using the security key at pcsc:\(readers[1])."))
            // The keys not touched were told to stop waiting (CTAP2_ERR_KEEPALIVE_CANCEL).
            #expect(UDPCommandTests.waitFor("status=0x2d", in: idleUDP.log, seconds: 5), "\(idleUDP.logText)")
            #expect(UDPCommandTests.waitFor("status=0x2d", in: idleCard.log, seconds: 5), "\(idleCard.logText)")
            _ = touchedCard
        }
    }

    @Test func twoProcessesEachOnItsOwnUDPKeyAtOnceWithPlainURIs() throws {
        let work = try Self.scratch("two-udp")
        defer { try? FileManager.default.removeItem(at: work) }
        let base = CLIRunner.freeUDPPort(count: 2)
        let ports = [base, base + 1]
        // Each key waits a second for its touch, so the two registrations overlap.
        let keys = try ports.map {
            try ServedKey(
                ["--udp", "127.0.0.1:\($0)", "--presence", "delay:1000"],
                log: work.appendingPathComponent("key-\($0).log"))
        }
        for port in ports {
            CLIRunner.waitUntilServed("udp:127.0.0.1:\(port)")
        }
        let runs = try ports.map { port -> (Process, URL, URL) in
            let out = work.appendingPathComponent("register-\(port).out")
            let err = work.appendingPathComponent("register-\(port).err")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            _ = FileManager.default.createFile(atPath: err.path, contents: nil)
            let process = Process()
            process.executableURL = CLIRunner.binary
            process.arguments = [
                "register", "--device", "udp:127.0.0.1:\(port)", "--rp", "example.org", "--user", "u", "--json",
            ]
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = try FileHandle(forWritingTo: err)
            try process.run()
            return (process, out, err)
        }
        for (process, out, err) in runs {
            process.waitUntilExit()
            let stderr = String(decoding: FileManager.default.contents(atPath: err.path) ?? Data(), as: UTF8.self)
            #expect(process.terminationStatus == 0, "\(stderr)")
            let object = try JSONSerialization.jsonObject(with: FileManager.default.contents(atPath: out.path) ?? Data())
                as? [String: Any]
            #expect((object?["device"] as? String)?.hasPrefix("udp:127.0.0.1:") == true)
        }
        #expect(runs[0].0.processIdentifier != runs[1].0.processIdentifier)
        _ = keys
    }
}
