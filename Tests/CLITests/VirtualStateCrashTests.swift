import Foundation
import Testing

/// `virtual serve --state FILE` killed with SIGKILL while it writes: the file is always the old
/// or the new state, and a second server on the same file is refused.
@Suite(.serialized) struct VirtualStateCrashTests {
    /// The PIN after `changes` changes from the first one (all four digits, all distinct).
    static func pin(_ changes: Int) -> String { String(1000 + changes) }

    /// Starts a server on `state` and waits until the key answers on `port`.
    static func serve(state: String, port: Int, log: URL) throws -> ChoiceCommandTests.ServedKey {
        var key = try ChoiceCommandTests.ServedKey(["--udp", "127.0.0.1:\(port)", "--state", state], log: log)
        // The port may still be held for a moment (another suite's server on the same
        // pid-derived port, or the killed one not yet gone): start again, a few times.
        for _ in 0..<10 {
            key.process.waitUntilExitOrTimeout(0.2)
            guard !key.process.isRunning, key.logText.contains("errno 98") else { break }
            key = try ChoiceCommandTests.ServedKey(["--udp", "127.0.0.1:\(port)", "--state", state], log: log)
        }
        for _ in 0..<100 {
            if (try? CLIRunner.run(["pin", "status", "--device", "udp:127.0.0.1:\(port)?local=0"]).status) == 0 {
                return key
            }
            guard key.process.isRunning else {
                // A torn state file is refused at start: this is where one would show.
                throw CLITestError("virtual serve refused the state file: \(key.logText)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw CLITestError("the UDP key did not answer within 5 s: \(key.logText)")
    }

    @Test func sigkillDuringPINChangesLeavesTheOldOrTheNewState() throws {
        let work = try ChoiceCommandTests.scratch("state-crash")
        defer { try? FileManager.default.removeItem(at: work) }
        let state = work.appendingPathComponent("state").path
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let acknowledged = work.appendingPathComponent("acknowledged")
        var changes = 0
        do {
            let key = try Self.serve(state: state, port: port, log: work.appendingPathComponent("serve-0.log"))
            #expect(try CLIRunner.run(["pin", "set", "--device", device, "--pin-stdin"], input: Self.pin(0) + "\n").status == 0)
            kill(key.process.processIdentifier, SIGKILL)
            key.process.waitUntilExit()
        }
        var generator = SystemRandomNumberGenerator()
        for round in 1...20 {
            let key = try Self.serve(
                state: state, port: port, log: work.appendingPathComponent("serve-\(round).log"))
            // The PIN is the last acknowledged one, or the one a change in flight set when killed.
            let verifyLast = try CLIRunner.run(
                ["pin", "verify", "--device", device, "--pin-stdin"], input: Self.pin(changes) + "\n")
            if verifyLast.status != 0 {
                let verifyNext = try CLIRunner.run(
                    ["pin", "verify", "--device", device, "--pin-stdin"], input: Self.pin(changes + 1) + "\n")
                try #require(
                    verifyNext.status == 0,
                    "round \(round): the PIN is neither \(Self.pin(changes)) nor \(Self.pin(changes + 1)): \(verifyLast.stderr) \(verifyNext.stderr)"
                )
                changes += 1
            }
            // A client changing the PIN in a loop, writing each change the key acknowledged.
            try? FileManager.default.removeItem(at: acknowledged)
            let client = Process()
            client.executableURL = URL(fileURLWithPath: "/bin/bash")
            client.arguments = [
                "-c",
                """
                n=$1
                while :; do
                    printf '%s\\n%s\\n' $((1000 + n)) $((1001 + n)) \
                        | "$0" pin change --device "$2" --pin-stdin --timeout 3 >/dev/null 2>&1 || exit 0
                    n=$((n + 1)); echo $n >> "$3"
                done
                """,
                CLIRunner.binary.path, String(changes), device, acknowledged.path,
            ]
            try client.run()
            Thread.sleep(forTimeInterval: Double.random(in: 0.05...0.8, using: &generator))
            kill(key.process.processIdentifier, SIGKILL)
            key.process.waitUntilExit()
            client.waitUntilExit()
            let lines = String(decoding: FileManager.default.contents(atPath: acknowledged.path) ?? Data(), as: UTF8.self)
                .split(separator: "\n")
            if let last = lines.last.flatMap({ Int($0) }) { changes = last }
        }
        // The loop did change the PIN: the test exercised writes, not only starts.
        #expect(changes >= 5, "only \(changes) PIN changes were acknowledged")
    }

    @Test func aSecondServerOnTheSameStateFileIsRefused() throws {
        let work = try ChoiceCommandTests.scratch("state-lock")
        defer { try? FileManager.default.removeItem(at: work) }
        let state = work.appendingPathComponent("state").path
        let port = CLIRunner.freeUDPPort()
        let first = try Self.serve(state: state, port: port, log: work.appendingPathComponent("first.log"))
        let before = FileManager.default.contents(atPath: state)
        let second = try CLIRunner.run(["virtual", "serve", "--udp", "127.0.0.1:\(port + 1)", "--state", state])
        #expect(second.status != 0)
        #expect(second.stderr.contains("in use by another virtual key"), "\(second.stderr)")
        #expect(FileManager.default.contents(atPath: state) == before)
        #expect(first.process.isRunning)
        // Once the first is gone (even by SIGKILL), the file is free again.
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()
        _ = try Self.serve(state: state, port: port + 1, log: work.appendingPathComponent("third.log"))
    }
}

extension Process {
    /// Waits until the process exits or `seconds` pass, whichever is first.
    func waitUntilExitOrTimeout(_ seconds: Double) {
        let end = Date().addingTimeInterval(seconds)
        while isRunning && Date() < end { Thread.sleep(forTimeInterval: 0.02) }
    }
}
