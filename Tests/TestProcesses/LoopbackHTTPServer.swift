import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Python's http.server on 127.0.0.1 serving a directory (files added later are served too):
/// the metadata BLOBs and CRLs `mds update`, `verify --mds` and the revocation checks fetch.
public final class LoopbackHTTPServer {
    let process = Process()
    /// The TCP port it listens on.
    public let port: Int

    /// Starts serving `directory` on a free port; throws when it does not start within 10 s.
    public init(directory: URL) throws {
        let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"] ?? "/usr/bin/python3"
        process.executableURL = URL(fileURLWithPath: python)
        // The server writes its port to a file: no pipe to read, nothing to block on.
        let portFile = FileManager.default.temporaryDirectory.appendingPathComponent("http-port-\(UUID())")
        process.arguments = [
            "-c",
            """
            import functools, http.server, os, sys
            handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            with open(sys.argv[2] + ".tmp", "w") as f:
                f.write("%d\\n" % server.server_address[1])
            os.rename(sys.argv[2] + ".tmp", sys.argv[2])
            server.serve_forever()
            """,
            directory.path, portFile.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { try? FileManager.default.removeItem(at: portFile) }
        var found: Int?
        for _ in 0..<100 where found == nil {
            if let text = try? String(contentsOf: portFile, encoding: .utf8), text.hasSuffix("\n") {
                found = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            } else {
                usleep(100_000)
            }
        }
        guard let port = found else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw BedError("the loopback HTTP server did not start")
        }
        self.port = port
    }

    /// The URL of `path` on this server.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// SIGKILL: the test process may block SIGTERM, and a child inherits its signal mask.
    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
