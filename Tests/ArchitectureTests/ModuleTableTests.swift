import Foundation
import TestProcesses
import Testing

/// Docs/Architecture.md's table of allowed imports (`| module | may import |`) against the
/// target dependencies Package.swift declares, read from `swift package dump-package` (the
/// manifest as SwiftPM itself evaluates it; no network, no build).
@Suite struct ModuleTableTests {
    /// The package root: two folders above this file's folder.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func architectureTableMatchesPackageSwift() async throws {
        let documented = try ModuleTable.parse(
            markdown: String(
                contentsOf: Self.packageRoot.appendingPathComponent("Docs/Architecture.md"), encoding: .utf8))
        let declared = try ModuleTable.declared(manifestJSON: try await Self.dumpPackage())
        let differences = ModuleTable.differences(documented: documented, declared: declared)
        let report =
            "Docs/Architecture.md's module table and Package.swift disagree; these rows should read:\n"
            + differences.joined(separator: "\n")
        #expect(differences.isEmpty, Comment(rawValue: report))
    }

    /// The parser reads the table's shapes: several modules in one row, "nothing of ours",
    /// and the rows end at the first line that is not a row.
    @Test func parserReadsRows() throws {
        let table = try ModuleTable.parse(
            markdown: """
                Text before.

                | module | may import |
                | --- | --- |
                | `A`, `B` | nothing of ours |
                | `C` | `A`, `CZ` |

                | other | table |
                | `D` | `E` |
                """)
        #expect(table == ["A": [], "B": [], "C": ["A", "CZ"]])
    }

    /// A drifted table names each row that differs, what to add and what to remove.
    @Test func differencesNameTheRows() {
        let differences = ModuleTable.differences(
            documented: ["A": [], "C": ["A"], "Gone": []],
            declared: ["A": [], "C": ["A", "B"], "New": ["A"]])
        #expect(
            differences == [
                "| `C` | `A`, `B` |   (Package.swift also declares `B`)",
                "| `Gone` | ... |   (no such target in Package.swift: remove the row)",
                "| `New` | `A` |   (no row in the table)",
            ])
    }

    /// `swift package dump-package` in a scratch folder of its own, so that it neither waits
    /// for the lock of the build running these tests nor touches its products. It compiles the
    /// manifest first (seconds on a busy machine), so it is waited for off the cooperative pool.
    static func dumpPackage() async throws -> Data {
        let scratch = FileManager.default.temporaryDirectory
            .appendingPathComponent("securitykey-dump-package-\(getpid())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let output = try await TestProcess.run(
            "/usr/bin/env",
            ["swift", "package", "--package-path", packageRoot.path, "--scratch-path", scratch.path, "dump-package"],
            timeout: .seconds(600))
        guard output.status == 0 else {
            throw ModuleTable.Failure("swift package dump-package exited with \(output.status): \(output.stderrText.suffix(1000))")
        }
        return output.stdout
    }
}

/// A module table: each module's name and the modules of ours it may import.
enum ModuleTable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The rows of the first `| module | may import |` table in `markdown`.
    static func parse(markdown: String) throws -> [String: Set<String>] {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard let header = lines.firstIndex(of: "| module | may import |") else {
            throw Failure("no `| module | may import |` table")
        }
        var table: [String: Set<String>] = [:]
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 2 else { throw Failure("a row without two cells: \(line)") }
            let imports = Set(names(in: cells[1]))
            for module in names(in: cells[0]) {
                guard table.updateValue(imports, forKey: module) == nil else {
                    throw Failure("`\(module)` has two rows")
                }
            }
        }
        return table
    }

    /// The names written in backticks in a cell.
    static func names(in cell: String) -> [String] {
        cell.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    /// The library and executable targets of `swift package dump-package` output, each with the
    /// targets of this package it depends on. Left out: test targets, their helpers under
    /// `Tests/`, the C system-library modules (which depend on nothing) and third-party products.
    static func declared(manifestJSON: Data) throws -> [String: Set<String>] {
        struct Manifest: Decodable {
            struct Target: Decodable {
                let name: String
                let type: String
                let path: String?
                let dependencies: [[String: Dependency]]
            }
            /// `byName` and `target` carry the name first; `product` names a package's product.
            struct Dependency: Decodable {
                let name: String?
                init(from decoder: any Decoder) throws {
                    var container = try decoder.unkeyedContainer()
                    name = try container.decodeIfPresent(String.self)
                }
            }
            let targets: [Target]
        }
        let manifest = try JSONDecoder().decode(Manifest.self, from: manifestJSON)
        let ours = Set(manifest.targets.map(\.name))
        var table: [String: Set<String>] = [:]
        for target in manifest.targets
        where ["regular", "executable"].contains(target.type) && !(target.path ?? "").hasPrefix("Tests/") {
            let names = target.dependencies.flatMap { dependency in
                dependency.compactMap { kind, value in kind == "product" ? nil : value.name }
            }
            table[target.name] = Set(names.filter(ours.contains))
        }
        return table
    }

    /// One line per module whose row differs, written as the row should read.
    static func differences(documented: [String: Set<String>], declared: [String: Set<String>]) -> [String] {
        func row(_ module: String, _ imports: Set<String>) -> String {
            let cell =
                imports.isEmpty
                ? "nothing of ours" : imports.sorted().map { "`\($0)`" }.joined(separator: ", ")
            return "| `\(module)` | \(cell) |"
        }
        func list(_ names: Set<String>) -> String { names.sorted().map { "`\($0)`" }.joined(separator: ", ") }
        var lines: [String] = []
        for module in Set(documented.keys).union(declared.keys).sorted() {
            switch (documented[module], declared[module]) {
            case (let table?, let package?) where table != package:
                var notes: [String] = []
                if !package.subtracting(table).isEmpty {
                    notes.append("Package.swift also declares \(list(package.subtracting(table)))")
                }
                if !table.subtracting(package).isEmpty {
                    notes.append("Package.swift does not declare \(list(table.subtracting(package)))")
                }
                lines.append(row(module, package) + "   (" + notes.joined(separator: "; ") + ")")
            case (nil, let package?):
                lines.append(row(module, package) + "   (no row in the table)")
            case (_?, nil):
                lines.append("| `\(module)` | ... |   (no such target in Package.swift: remove the row)")
            default:
                break
            }
        }
        return lines
    }
}
