import Foundation
import Testing

/// python-fido2 and cryptography, the independent view the CLI's output is checked against.
enum PythonFido2 {
    /// The interpreter named by SECURITYKEY_PYTHON, or a recorded failure saying how to set it.
    static func interpreter(sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        guard let path = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"], !path.isEmpty else {
            Issue.record(
                "SECURITYKEY_PYTHON is not set: point it at a Python with python-fido2 and cryptography (make pydeps; .venv/bin/python3).",
                sourceLocation: sourceLocation)
            return nil
        }
        return path
    }

    /// The repository's scripts/python, whose modules the helper scripts import.
    static var sharedModules: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/python")
    }

    /// The directory of the helper scripts.
    static var scripts: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Python")
    }

    /// Runs `script` (Python source) with `arguments` and parses its standard output as a JSON object.
    static func runJSON(_ python: String, _ script: String, _ arguments: [String], input: String? = nil)
        throws
        -> [String: Any]
    {
        // The helper scripts share scripts/python's modules (udp_hid.py).
        let result = try CLIRunner.run(
            executable: URL(fileURLWithPath: python), ["-c", script] + arguments, input: input,
            environment: ["PYTHONPATH": sharedModules.path])
        guard result.status == 0 else { throw CLITestError("python failed: \(result.stderr)") }
        let data = Data(result.stdout.utf8)
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw CLITestError("python printed no JSON object")
        }
        return object
    }

    /// Runs a helper script from Tests/CLITests/Python.
    static func runScript(_ python: String, _ name: String, _ arguments: [String], input: String? = nil)
        throws
        -> [String: Any]
    {
        let source = try String(contentsOf: scripts.appendingPathComponent(name), encoding: .utf8)
        return try runJSON(python, source, arguments, input: input)
    }
}
