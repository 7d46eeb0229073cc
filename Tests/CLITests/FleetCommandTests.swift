import Foundation
import Testing

/// `securitykey fleet` over UDP: virtual keys with and without a PIN (one CTAP 2.1), one
/// endpoint that never answers and one that answers with random bytes.
@Suite(.serialized) struct FleetCommandTests {
    /// A UDP endpoint run by python3: `silent` reads and never answers, `garbage` answers every
    /// datagram with 64 random bytes.
    final class FakeEndpoint {
        let process = Process()

        init(port: Int, garbage: Bool) throws {
            let script = """
                import os, socket, sys
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind(("127.0.0.1", \(port)))
                print("ready", flush=True)
                while True:
                    data, peer = s.recvfrom(2048)
                    if \(garbage ? "True" : "False"):
                        s.sendto(os.urandom(64), peer)
                """
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Bound before the fleet is asked.
            _ = out.fileHandleForReading.availableData
        }

        deinit {
            // SIGKILL: the test runner's children may inherit SIGTERM blocked.
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    static let plainAAGUID = "11111111-2222-3333-4444-555555555555"
    static let pinAAGUID = "66666666-7777-8888-9999-aaaaaaaaaaaa"

    /// Runs `body` with two virtual keys (no PIN, CTAP 2.0; PIN 123456, CTAP 2.1), a silent
    /// endpoint and a garbage one; `body` gets the `--udp` arguments and the four URIs.
    func withFleet(_ body: ([String], [String]) throws -> Void) throws {
        let ports = (0..<4).map { _ in CLIRunner.freeUDPPort() }
        let work = try ChoiceCommandTests.scratch("fleet")
        defer { try? FileManager.default.removeItem(at: work) }
        let plain = try ChoiceCommandTests.ServedKey(
            ["--udp", "127.0.0.1:\(ports[0])", "--aaguid", Self.plainAAGUID],
            log: work.appendingPathComponent("plain.log"))
        let withPIN = try ChoiceCommandTests.ServedKey(
            ["--udp", "127.0.0.1:\(ports[1])", "--aaguid", Self.pinAAGUID, "--pin", "123456", "--profile", "ctap21"],
            log: work.appendingPathComponent("pin.log"))
        let silent = try FakeEndpoint(port: ports[2], garbage: false)
        let garbage = try FakeEndpoint(port: ports[3], garbage: true)
        for port in ports[0...1] {
            CLIRunner.waitUntilServed("udp:127.0.0.1:\(port)")
        }
        try body(ports.flatMap { ["--udp", "127.0.0.1:\($0)"] }, ports.map { "udp:127.0.0.1:\($0)" })
        _ = (plain, withPIN, silent, garbage)
    }

    /// Runs the fleet and the wall time it took.
    func timed(_ arguments: [String]) throws -> (CLIRunner.Result, Double) {
        let start = Date()
        let result = try CLIRunner.run(["fleet", "--key-timeout", "2"] + arguments)
        return (result, Date().timeIntervalSince(start))
    }

    @Test func jsonReportsEveryKeyAndTheSilentOneCostsOnlyItsDeadline() throws {
        try withFleet { udp, uris in
            let (result, seconds) = try timed(["--json"] + udp)
            try #require(result.status == 0, "\(result.stderr)")
            let keys = try #require(try result.json() as? [[String: Any]])
            #expect(keys.compactMap { $0["uri"] as? String } == uris)
            let plain = keys[0], pin = keys[1], silent = keys[2], garbage = keys[3]
            #expect(plain["aaguid"] as? String == Self.plainAAGUID)
            #expect(plain["pinSet"] as? Bool == false)
            #expect(plain["versions"] as? [String] == ["U2F_V2", "FIDO_2_0", "FIDO_2_1", "FIDO_2_2", "FIDO_2_3"], "the default profile is ctap22")
            #expect(plain["healthy"] as? Bool == true)
            #expect(plain["assertionStatus"] as? String == "CTAP2_ERR_NO_CREDENTIALS")
            #expect(pin["aaguid"] as? String == Self.pinAAGUID)
            #expect(pin["pinSet"] as? Bool == true)
            #expect(pin["pinRetries"] as? Int == 8)
            #expect((pin["versions"] as? [String])?.contains("FIDO_2_1") == true)
            #expect((pin["options"] as? [String: Bool])?["clientPin"] == true)
            #expect(pin["healthy"] as? Bool == true)
            for failed in [silent, garbage] {
                #expect(failed["healthy"] as? Bool == false)
                #expect(failed["aaguid"] is NSNull)
                #expect((failed["error"] as? [String: Any])?["code"] as? String == "timeout")
            }
            // Two seconds for the silent key, inspected alongside the others; not 2 × 2 s, and
            // not a transport's longer open timeout.
            #expect(seconds < 4, "the fleet took \(seconds) s")
            #expect(((silent["elapsedMs"] as? Int) ?? 0) >= 1900)
        }
    }

    @Test func ndjsonIsOneLinePerKeyAndCSVHasAHeaderAndARowPerKey() throws {
        try withFleet { udp, uris in
            let (lines, _) = try timed(["--ndjson"] + udp)
            try #require(lines.status == 0, "\(lines.stderr)")
            let objects = try lines.stdout.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            #expect(Set(objects.compactMap { $0["uri"] as? String }) == Set(uris))
            #expect(objects.count == 4)
            // The silent key finishes last: lines come as keys finish.
            #expect(objects.prefix(2).allSatisfy { $0["healthy"] as? Bool == true })

            let (csv, _) = try timed(["--csv"] + udp)
            try #require(csv.status == 0, "\(csv.stderr)")
            let rows = csv.stdout.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
            try #require(rows.count == 5)
            let header = rows[0].map(String.init)
            let uri = try #require(header.firstIndex(of: "uri"))
            let aaguid = try #require(header.firstIndex(of: "aaguid"))
            let healthy = try #require(header.firstIndex(of: "healthy"))
            #expect(rows.dropFirst().allSatisfy { $0.count == header.count })
            #expect(rows.dropFirst().map { String($0[uri]) } == uris)
            #expect(String(rows[1][aaguid]) == Self.plainAAGUID)
            #expect(rows.dropFirst().map { String($0[healthy]) } == ["true", "true", "false", "false"])
        }
    }

    @Test func policyVerdictsAndExitStatusSeven() throws {
        let work = try ChoiceCommandTests.scratch("fleet-policy")
        defer { try? FileManager.default.removeItem(at: work) }
        let strict = work.appendingPathComponent("strict.json")
        try Data(#"{"pinRequired": true, "allowedAAGUIDs": ["\#(Self.pinAAGUID.uppercased())"]}"#.utf8).write(to: strict)
        let misspelt = work.appendingPathComponent("misspelt.json")
        try Data(#"{"pinRequried": true}"#.utf8).write(to: misspelt)
        try withFleet { udp, uris in
            let (result, _) = try timed(["--json", "--policy", strict.path] + udp)
            #expect(result.status == 7, "\(result.stderr)")
            #expect(result.stderr.contains("3 of 4 key(s) fail the policy"))
            let keys = try #require(try result.json() as? [[String: Any]])
            let verdicts = keys.map { $0["policy"] as? [String: Any] }
            #expect(verdicts.map { $0?["pass"] as? Bool } == [false, true, false, false])
            let plainReasons = verdicts[0]?["reasons"] as? [String] ?? []
            #expect(plainReasons.contains("No PIN is set."))
            #expect(plainReasons.contains { $0.contains("AAGUID \(Self.plainAAGUID) is not allowed") })
            // Only the complying key: the fleet complies.
            let (one, _) = try timed(["--json", "--policy", strict.path, "--udp", String(uris[1].dropFirst(4))])
            #expect(one.status == 0, "\(one.stderr)")
            // A misspelt rule is refused, not ignored.
            let (bad, _) = try timed(["--policy", misspelt.path] + udp)
            #expect(bad.status == 64)
            #expect(bad.stderr.contains("pinRequried"))
        }
    }

    /// The subject of the PEM certificate at `path`, as openssl (an independent parser) prints
    /// it with RFC 2253 names.
    static func opensslSubject(_ path: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "x509", "-in", path, "-noout", "-subject", "-nameopt", "RFC2253"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "subject=", with: "")
    }

    /// `--attest`: each key registers a throwaway credential; the statement is verified and its
    /// path must reach a root given with --trust-root (each served key wrote its own root).
    @Test func attestProvesKeysGenuineAgainstTheRootsGiven() throws {
        let ports = (0..<3).map { _ in CLIRunner.freeUDPPort() }
        let work = try ChoiceCommandTests.scratch("fleet-attest")
        defer { try? FileManager.default.removeItem(at: work) }
        let rootA = work.appendingPathComponent("a.pem").path, rootB = work.appendingPathComponent("b.pem").path
        let keyA = try ChoiceCommandTests.ServedKey(
            ["--udp", "127.0.0.1:\(ports[0])", "--profile", "ctap21", "--pin", "123456", "--attestation-root", rootA],
            log: work.appendingPathComponent("a.log"))
        let keyB = try ChoiceCommandTests.ServedKey(
            ["--udp", "127.0.0.1:\(ports[1])", "--attestation-root", rootB], log: work.appendingPathComponent("b.log"))
        // CTAP 2.0 with a PIN: registering needs the PIN, which a fleet never asks for.
        let keyC = try ChoiceCommandTests.ServedKey(
            ["--udp", "127.0.0.1:\(ports[2])", "--profile", "ctap20", "--pin", "123456"],
            log: work.appendingPathComponent("c.log"))
        for port in ports {
            CLIRunner.waitUntilServed("udp:127.0.0.1:\(port)")
        }
        let udp = ports.flatMap { ["--udp", "127.0.0.1:\($0)"] }
        let result = try CLIRunner.run(["fleet", "--attest", "--trust-root", rootA, "--json"] + udp)
        try #require(result.status == 0, "\(result.stderr)")
        let keys = try #require(try result.json() as? [[String: Any]])
        try #require(keys.count == 3)
        let a = try #require(keys[0]["attestation"] as? [String: Any])
        let b = try #require(keys[1]["attestation"] as? [String: Any])
        let c = try #require(keys[2]["attestation"] as? [String: Any])
        #expect(a["genuine"] as? Bool == true)
        #expect(a["format"] as? String == "packed")
        #expect(a["type"] as? String == "basic")
        #expect(a["anchor"] as? String == (try Self.opensslSubject(rootA)))
        // B's statement verifies, but its root was not given.
        #expect(b["statementVerified"] as? Bool == true)
        #expect(b["trusted"] as? Bool == false)
        #expect(b["genuine"] as? Bool == false)
        #expect(c["genuine"] as? Bool == false)
        #expect((c["problem"] as? String)?.contains("PIN") == true, "\(c)")

        // Both roots: A and B are genuine; with a policy, C alone fails it.
        let policy = work.appendingPathComponent("any.json")
        try Data("{}".utf8).write(to: policy)
        let both = try CLIRunner.run(
            ["fleet", "--attest", "--trust-root", rootA, "--trust-root", rootB, "--json", "--policy", policy.path] + udp)
        #expect(both.status == 7, "\(both.stderr)")
        let judged = try #require(try both.json() as? [[String: Any]])
        #expect(judged.map { ($0["attestation"] as? [String: Any])?["genuine"] as? Bool } == [true, true, false])
        #expect(judged.map { ($0["policy"] as? [String: Any])?["pass"] as? Bool } == [true, true, false])
        _ = (keyA, keyB, keyC)
    }

    /// `--watch --ndjson`: a key that starts answering on a configured endpoint is reported
    /// as it arrives, and again when it goes away.
    @Test func watchReportsAKeyArrivingAndLeaving() throws {
        let port = CLIRunner.freeUDPPort()
        let work = try ChoiceCommandTests.scratch("fleet-watch")
        defer { try? FileManager.default.removeItem(at: work) }
        let watcher = try FleetWatcher(["--udp", "127.0.0.1:\(port)"], in: work)
        Thread.sleep(forTimeInterval: 1)
        #expect(watcher.events(within: 0.1) { _ in true }.isEmpty, "nothing answers yet")
        var key: ChoiceCommandTests.ServedKey? = try ChoiceCommandTests.ServedKey(
            ["--udp", "127.0.0.1:\(port)", "--aaguid", Self.plainAAGUID], log: work.appendingPathComponent("key.log"))
        let arrived = watcher.events(within: 15) { $0.contains { $0["event"] as? String == "arrived" } }
        let first = try #require(arrived.first, "no arrival reported")
        #expect(first["event"] as? String == "arrived")
        #expect(first["uri"] as? String == "udp:127.0.0.1:\(port)")
        #expect(first["aaguid"] as? String == Self.plainAAGUID)
        #expect(first["healthy"] as? Bool == true)
        key = nil  // stops the served key
        let all = watcher.events(within: 15) { $0.contains { $0["event"] as? String == "left" } }
        #expect(all.map { $0["event"] as? String } == ["arrived", "left"])
        #expect(all.last?["uri"] as? String == "udp:127.0.0.1:\(port)")
        _ = key
    }

    /// The round-trip time of one getInfo over CTAPHID/UDP, in ms, and its CTAP status, measured by
    /// python3 speaking the raw reports (CTAP 2.1 §11.2) rather than by our host.
    static func rawGetInfo(port: Int) throws -> (milliseconds: Int, status: Int) {
        let script = """
            import os, socket, struct, time
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(5)
            s.connect(("127.0.0.1", \(port)))
            nonce = os.urandom(8)
            s.send(b"\\xff" * 4 + bytes([0x86]) + struct.pack(">H", 8) + nonce + bytes(49))
            while True:
                r = s.recv(64)
                if r[:5] == b"\\xff" * 4 + bytes([0x86]) and r[7:15] == nonce:
                    break
            cid = r[15:19]
            start = time.monotonic()
            s.send(cid + bytes([0x90]) + struct.pack(">H", 1) + bytes([0x04]) + bytes(56))
            while True:
                r = s.recv(64)
                if r[:4] == cid and r[4] == 0x90:
                    break
            print(int((time.monotonic() - start) * 1000), r[7])
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let fields = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        try #require(process.terminationStatus == 0 && fields.count == 2, "python3 printed \(text)")
        return (fields[0], fields[1])
    }

    @Test func oneProcessServesManyDistinctKeysEachAnsweringAfterItsLatency() throws {
        let work = try ChoiceCommandTests.scratch("fleet-many")
        defer { try? FileManager.default.removeItem(at: work) }
        // --count serves consecutive ports; base + 10 is for the refused --state case below.
        let base = CLIRunner.freeUDPPort(count: 11)
        let ports = Array(base..<(base + 4))
        let served = try ChoiceCommandTests.ServedKey(
            ["--udp", "127.0.0.1:\(base)", "--count", "4", "--latency", "50"],
            log: work.appendingPathComponent("many.log"))
        // Up once the last key answers (the process binds them in order).
        for _ in 0..<50 {
            if (try? CLIRunner.run(["info", "--device", "udp:127.0.0.1:\(base + 3)"]).status) == 0 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let result = try CLIRunner.run(["fleet", "--json"] + ports.flatMap { ["--udp", "127.0.0.1:\($0)"] })
        try #require(result.status == 0, "\(result.stderr)")
        let keys = try #require(try result.json() as? [[String: Any]])
        #expect(keys.compactMap { $0["uri"] as? String } == ports.map { "udp:127.0.0.1:\($0)" })
        #expect(Set(keys.compactMap { $0["aaguid"] as? String }).count == 4, "four distinct keys")
        #expect(keys.allSatisfy { $0["healthy"] as? Bool == true })
        // The latency is behaviour, not performance: no answer may come before it.
        let (milliseconds, status) = try Self.rawGetInfo(port: ports[2])
        #expect(status == 0)
        #expect(milliseconds >= 50, "getInfo answered after \(milliseconds) ms")

        // One process serves the keys: its log names all four.
        #expect(served.logText.contains("4 virtual keys served"))
        // Per-key options are refused with --count.
        let refused = try CLIRunner.run(
            ["virtual", "serve", "--udp", "127.0.0.1:\(base + 10)", "--count", "2", "--state", work.appendingPathComponent("s").path])
        #expect(refused.status == 64, "\(refused.stderr)")
    }
}
