import Foundation
import Testing

/// The version scheme (CHANGELOG.md): the version is written once (`SecurityKeyPackage.version`),
/// and what the binaries report must be what the changelog's newest section and every
/// `.package(url:from:)` line in the README, Docs/ and the DocC catalog name, so a user copying
/// that line resolves the release the documents describe.
struct PackageVersionTests {
    static let repository = PCSCBed.repository

    /// `MAJOR.MINOR.PATCH` and nothing else (the tag scheme has no `v` and no suffix).
    static func isSemanticVersion(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
    }

    static func reportedVersion(of binary: URL) throws -> String {
        let result = try CLIRunner.run(executable: binary, ["--version"])
        #expect(result.status == 0)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func theBinariesTheChangelogAndThePackageLinesNameOneVersion() throws {
        let version = try Self.reportedVersion(of: CLIRunner.binary)
        #expect(Self.isSemanticVersion(version), "securitykey --version printed \(version)")

        // securitykeyd is built beside securitykey by `swift build --build-tests` (DaemonTests).
        let daemon = CLIRunner.binary.deletingLastPathComponent().appendingPathComponent("securitykeyd")
        if FileManager.default.isExecutableFile(atPath: daemon.path) {
            #expect(try Self.reportedVersion(of: daemon) == version)
        }

        let changelog = try String(
            contentsOf: Self.repository.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        // The newest released section: changes not released yet collect under "## Unreleased".
        let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## ") && $0 != "## Unreleased" }
            .map { $0.dropFirst(3) }
        #expect(newest.map(String.init) == version, "CHANGELOG.md's newest section is \(newest ?? "missing")")

        var documents = [Self.repository.appendingPathComponent("README.md")]
        for folder in ["Docs", "Sources/SecurityKeys/SecurityKeys.docc"] {
            documents += try FileManager.default.contentsOfDirectory(
                at: Self.repository.appendingPathComponent(folder), includingPropertiesForKeys: nil
            ).filter { $0.pathExtension == "md" }
        }
        var lines = 0
        for document in documents {
            let text = try String(contentsOf: document, encoding: .utf8)
            for line in text.split(separator: "\n") where line.contains(".package(url:") {
                lines += 1
                guard let from = line.range(of: "from: \"") else {
                    Issue.record("\(document.lastPathComponent): no from: in \(line)")
                    continue
                }
                let named = line[from.upperBound...].prefix { $0 != "\"" }
                #expect(String(named) == version, "\(document.lastPathComponent): \(line)")
            }
        }
        // README.md, Docs/LibraryGuide.md and the DocC article on adding the package show the line.
        #expect(lines >= 3)
    }
}
