import Foundation
import FuzzTargets
import Testing

/// Replays every regression file (a past crash or a hostile seed) of every fuzz target through
/// the same logic the libFuzzer executable runs (Docs/Fuzzing.md).
@Suite struct FuzzRegressionTests {
    /// The regression folder of each target: Regressions/<target name>/.
    static let root: URL? = Bundle.module.resourceURL?.appendingPathComponent("Regressions")

    /// Every (target, file) pair, named "target/file".
    static let cases: [String] = {
        guard let root else { return [] }
        let manager = FileManager.default
        let folders = (try? manager.contentsOfDirectory(atPath: root.path)) ?? []
        return folders.sorted().flatMap { folder in
            ((try? manager.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)) ?? [])
                .filter { !$0.hasPrefix(".") }.sorted().map { "\(folder)/\($0)" }
        }
    }()

    @Test("Every regression folder names a fuzz target")
    func foldersNameTargets() throws {
        let root = try #require(Self.root)
        let folders = try FileManager.default.contentsOfDirectory(atPath: root.path).filter { !$0.hasPrefix(".") }
        #expect(!folders.isEmpty)
        for folder in folders {
            #expect(FuzzTarget.named(folder) != nil, "Regressions/\(folder) is not a fuzz target")
        }
    }

    @Test("Regression file replays without a violated property", arguments: cases)
    func replay(_ name: String) throws {
        let root = try #require(Self.root)
        let target = try #require(FuzzTarget.named(String(name.prefix { $0 != "/" })))
        let bytes = try [UInt8](Data(contentsOf: root.appendingPathComponent(name)))
        #expect(throws: Never.self) { try target.run(bytes) }
    }

    @Test("Target names are unique")
    func uniqueNames() {
        #expect(Set(FuzzTarget.all.map(\.name)).count == FuzzTarget.all.count)
    }
}
