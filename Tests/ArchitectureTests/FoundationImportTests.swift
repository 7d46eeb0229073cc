import Foundation
import Testing

/// No module of ours imports full Foundation (or FoundationNetworking, FoundationXML,
/// FoundationInternationalization) unless it is listed here with the reason: full Foundation
/// links FoundationInternationalization and ICU's data (about 34 MB) into every binary that uses
/// the module (issue 30). FoundationEssentials, Dispatch, Synchronization and Glibc are fine.
@Suite struct FoundationImportTests {
    /// Files (relative to the package root) that may import full Foundation, and why.
    static let allowed: [String: String] = [
        "Sources/Benchmarks/": "securitykey-bench is not installed; it runs python-fido2 and libfido2 with Process",
    ]

    /// The Foundation modules that bring ICU (directly or through Foundation).
    static let heavy: Set<String> = [
        "Foundation", "FoundationNetworking", "FoundationXML", "FoundationInternationalization",
    ]

    @Test func noModuleImportsFullFoundation() throws {
        let root = ModuleTableTests.packageRoot
        let sources = root.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(atPath: sources.path) else {
            Issue.record("cannot list \(sources.path)")
            return
        }
        var offenders: [String] = []
        var scanned = 0
        for case let relative as String in walker where relative.hasSuffix(".swift") {
            let path = "Sources/" + relative
            let text = try String(contentsOf: sources.appendingPathComponent(relative), encoding: .utf8)
            scanned += 1
            for module in Self.importedModules(in: text) where Self.heavy.contains(module) {
                if !Self.allowed.keys.contains(where: { path == $0 || ($0.hasSuffix("/") && path.hasPrefix($0)) }) {
                    offenders.append("\(path): import \(module)")
                }
            }
        }
        #expect(scanned > 100, "the walk found only \(scanned) Swift files under Sources")
        #expect(
            offenders.isEmpty,
            Comment(
                rawValue: "import FoundationEssentials instead (or add the file to FoundationImportTests.allowed "
                    + "with the feature that needs full Foundation):\n" + offenders.joined(separator: "\n")))
    }

    /// The reader sees the import forms Swift allows, and nothing in comments or strings' text.
    @Test func readerFindsImports() {
        let text = """
            // import Foundation is discussed here
            import FoundationEssentials
            @preconcurrency import Foundation
              internal import FoundationNetworking
            #if canImport(FoundationXML)
                import FoundationXML
            #endif
            import struct Foundation.Data
            let s = "import Foundation"
            """
        #expect(
            Self.importedModules(in: text) == [
                "FoundationEssentials", "Foundation", "FoundationNetworking", "FoundationXML", "Foundation",
            ])
    }

    /// The module of every `import` declaration in `text`, one per line that starts with one
    /// (after attributes and an access level), including `import struct M.Name`.
    static func importedModules(in text: String) -> [String] {
        let modifiers: Set<String> = [
            "public", "internal", "package", "private", "fileprivate", "@_exported", "@preconcurrency",
            "@_implementationOnly", "@testable",
        ]
        let kinds: Set<String> = ["struct", "class", "enum", "protocol", "typealias", "func", "let", "var"]
        var modules: [String] = []
        for line in text.split(separator: "\n") {
            var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
            while let first = words.first, modifiers.contains(String(first)) { words = words.dropFirst() }
            guard words.first == "import" else { continue }
            words = words.dropFirst()
            if let kind = words.first, kinds.contains(String(kind)) { words = words.dropFirst() }
            guard let path = words.first else { continue }
            modules.append(String(path.split(separator: ".").first ?? path))
        }
        return modules
    }
}
