import Foundation
import Testing

/// The man pages carry the exit-status table the tool uses (scripts/man-exit-status.sh after
/// swift-argument-parser's generate-manual, as `make release` runs them).
@Suite struct ManPageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// (status, meaning) rows of the EXIT STATUS table in `securitykey --help`.
    static func helpRows() throws -> [(Int, String)] {
        let help = try CLIRunner.run(["--help"])
        try #require(help.status == 0)
        let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex(of: "EXIT STATUS"))
        var rows: [(Int, String)] = []
        for line in lines[(start + 1)...] {
            let parts = line.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let status = Int(parts[0]) else { break }
            rows.append((status, parts[1].trimmingCharacters(in: .whitespaces)))
        }
        return rows
    }

    /// The statuses of Docs/CLI.md's "Exit status" table.
    static func documentedStatuses() throws -> [Int] {
        let text = try String(contentsOf: root.appendingPathComponent("Docs/CLI.md"), encoding: .utf8)
        let start = try #require(text.range(of: "## Exit status\n"))
        var statuses: [Int] = []
        for line in text[start.upperBound...].split(separator: "\n") {
            if line.hasPrefix("#") { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            if let first = cells.first, let status = Int(first) { statuses.append(status) }
        }
        return statuses
    }

    /// (status, meaning) rows of the mdoc EXIT STATUS section of one page.
    static func manRows(_ page: String) -> [(Int, String)]? {
        let lines = page.split(separator: "\n").map(String.init)
        guard let start = lines.firstIndex(of: ".Sh \"EXIT STATUS\"") else { return nil }
        var rows: [(Int, String)] = []
        var index = start + 1
        while index < lines.count, !lines[index].hasPrefix(".Sh") {
            if lines[index].hasPrefix(".It "), let status = Int(lines[index].dropFirst(4)),
                index + 1 < lines.count
            {
                rows.append((status, lines[index + 1]))
            }
            index += 1
        }
        return rows
    }

    @Test func everyPageCarriesTheToolsExitStatusTable() throws {
        let help = try Self.helpRows()
        // The tool's table is the documented one (Docs/CLI.md), status for status.
        #expect(help.map(\.0) == [0, 1, 2, 3, 4, 5, 6, 7, 64])
        #expect(help.map(\.0) == (try Self.documentedStatuses()))

        let generator = CLIRunner.binary.deletingLastPathComponent().appendingPathComponent("generate-manual")
        try #require(
            FileManager.default.isExecutableFile(atPath: generator.path),
            "no \(generator.path): swift build --product generate-manual (make test does)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("man-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let generated = try CLIRunner.run(
            executable: generator,
            [CLIRunner.binary.path, "--multi-page", "--output-directory", directory.path])
        try #require(generated.status == 0, "\(generated.stderr)")
        let script = Self.root.appendingPathComponent("scripts/man-exit-status.sh")
        let fixed = try CLIRunner.run(executable: script, [CLIRunner.binary.path, directory.path])
        try #require(fixed.status == 0, "\(fixed.stderr)")

        let pages = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasSuffix(".1")
        }
        #expect(pages.contains("securitykey.1"))
        #expect(pages.contains("securitykey.register.1"))
        #expect(pages.count > 20)
        for name in pages {
            let page = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            let rows = try #require(Self.manRows(page), "\(name) has no EXIT STATUS section")
            #expect(rows.map(\.0) == help.map(\.0), "\(name)")
            #expect(rows.map(\.1) == help.map(\.1), "\(name)")
            #expect(!page.contains(".Ex -std"), "\(name) keeps the generic section")
            // The plain-text copy of the table is gone from the description.
            #expect(!page.contains("\nEXIT STATUS\n"), "\(name)")
        }
    }
}
