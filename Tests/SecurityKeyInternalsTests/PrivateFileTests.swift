import Foundation
import TestProcesses
import Testing
import _SecurityKeyInternals

/// `PrivateFile`'s replacement: mode 0600, and the temporary files a killed writer left behind
/// removed by the next write (those of live writers kept).
@Suite struct PrivateFileTests {
    @Test func aWriteRemovesTheTemporaryFilesOfWritersThatAreGone() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "private-file-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tokens.cbor").path

        // A process that has exited: its pid names no process (unless reused within this test).
        let gone = try await TestProcess.onThread { () throws -> Process in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/true")
            try process.run()
            process.waitUntilExit()
            return process
        }
        let names = [
            "tokens.cbor.tmp-\(gone.processIdentifier)-12345",  // a writer that is gone
            "tokens.cbor.tmp-\(getpid())-777",  // this process: a live writer
            "tokens.cbor.tmp-notapid-1",  // not a name PrivateFile makes
            "other.cbor.tmp-\(gone.processIdentifier)-1",  // another file's
        ]
        for name in names {
            try Data("half".utf8).write(to: directory.appendingPathComponent(name))
        }

        try PrivateFile(path: path).write(Array("new".utf8))

        let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory.path))
        #expect(left == Set(["tokens.cbor"] + names.dropFirst()))
        #expect(try PrivateFile(path: path).read() == Array("new".utf8))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}
