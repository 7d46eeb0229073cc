import Foundation

/// Hex helpers and the shared vector file, for the CTAPHID tests.
enum Hex {
    static func decode(_ text: String) -> [UInt8] {
        let digits = Array(text.filter { !$0.isWhitespace }.utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index + 1 < digits.count {
            let pair = String(decoding: digits[index...index + 1], as: UTF8.self)
            bytes.append(UInt8(pair, radix: 16) ?? 0)
            index += 2
        }
        return bytes
    }

    static func encode<C: Collection<UInt8>>(_ bytes: C) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

enum Vectors {
    /// The python-fido2 vectors copied into Tests/Vectors.
    static func pythonFIDO2() throws -> [[String: Any]] {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/python-fido2-vectors.json")
        let data = try Data(contentsOf: url)
        return (try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
    }
}

/// Runs python-fido2 (the interpreter named by SECURITYKEY_PYTHON) on a script, feeding `input`.
enum PythonFIDO2 {
    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs the script with `input` on standard input. Files, not pipes, carry the data, and the
    /// wait does not block a cooperative thread.
    static func run(_ script: String, input: String) async throws -> String {
        guard let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"], !python.isEmpty else {
            throw Unavailable(
                description:
                    "SECURITYKEY_PYTHON is not set: point it at a python3 with python-fido2 (make pydeps).")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ctaphid-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let inputURL = directory.appendingPathComponent("in")
        let outputURL = directory.appendingPathComponent("out")
        let errorURL = directory.appendingPathComponent("err")
        try Data(input.utf8).write(to: inputURL)
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script]
        process.standardInput = try FileHandle(forReadingFrom: inputURL)
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            process.terminationHandler = { _ in continuation.resume() }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        guard process.terminationStatus == 0 else {
            let errors = (try? String(contentsOf: errorURL, encoding: .utf8)) ?? ""
            throw Unavailable(description: "python-fido2 failed: \(errors)")
        }
        return try String(contentsOf: outputURL, encoding: .utf8)
    }
}
