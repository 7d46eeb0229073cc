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

    static func run(_ script: String, input: String) throws -> String {
        guard let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"], !python.isEmpty else {
            throw Unavailable(
                description:
                    "SECURITYKEY_PYTHON is not set: point it at a python3 with python-fido2 (make pydeps).")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script]
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Unavailable(description: "python-fido2 failed: \(String(decoding: errors, as: UTF8.self))")
        }
        return String(decoding: output, as: UTF8.self)
    }
}
