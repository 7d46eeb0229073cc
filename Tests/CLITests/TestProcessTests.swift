import Foundation
import TestProcesses
import Testing

/// The shared child-process runner the CLI, daemon and python-fido2 tests use: it must not
/// stall on a child that fills both pipes, and must end a child that hangs.
struct TestProcessTests {
    @Test func bothOutputsLargerThanAPipeBufferAreReadWhole() throws {
        // 64 KiB is the pipe buffer: reading one output to its end before the other would stall.
        let output = try TestProcess.run(
            "/bin/sh", ["-c", "head -c 200000 /dev/zero >&2; head -c 300000 /dev/zero; exit 3"])
        #expect(output.stderr.count == 200_000)
        #expect(output.stdout.count == 300_000)
        #expect(output.status == 3)
    }

    @Test func inputIsFedAndEndedEvenWhenTheChildDoesNotReadIt() throws {
        let echoed = try TestProcess.run("/bin/cat", [], input: Data("pin\n".utf8))
        #expect(echoed.stdoutText == "pin\n")
        let ignored = try TestProcess.run("/bin/true", [], input: Data(count: 1 << 20))
        #expect(ignored.status == 0)
    }

    @Test func aChildThatHangsIsKilledAtItsTime() throws {
        let started = ContinuousClock.now
        #expect(throws: ProcessTimedOut.self) {
            try TestProcess.run("/bin/sh", ["-c", "echo partial >&2; exec sleep 60"], timeout: .seconds(1))
        }
        #expect(ContinuousClock.now - started < .seconds(30))
    }
}
