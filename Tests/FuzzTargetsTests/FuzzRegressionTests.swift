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
        let folders = try FileManager.default.contentsOfDirectory(atPath: root.path).filter {
            !$0.hasPrefix(".")
        }
        #expect(!folders.isEmpty)
        for folder in folders {
            #expect(FuzzTarget.named(folder) != nil, "Regressions/\(folder) is not a fuzz target")
        }
    }

    @Test("Regression file replays without a violated property", arguments: cases)
    func replay(_ name: String) async throws {
        let root = try #require(Self.root)
        let target = try #require(FuzzTarget.named(String(name.prefix { $0 != "/" })))
        let bytes = try [UInt8](Data(contentsOf: root.appendingPathComponent(name)))
        // Targets that drive async code (the virtual key, the MDS verifier) block their caller
        // until it finishes, as libFuzzer's callback must. On the cooperative pool, parallel
        // tests blocking every thread of it would starve that async code, so each replay runs
        // on a thread of its own.
        let violation = await withCheckedContinuation {
            (done: CheckedContinuation<FuzzPropertyViolation?, Never>) in
            Thread {
                do throws(FuzzPropertyViolation) {
                    try target.run(bytes)
                    done.resume(returning: nil)
                } catch {
                    done.resume(returning: error)
                }
            }.start()
        }
        #expect(violation == nil, "\(name): \(violation?.description ?? "")")
    }

    @Test("Target names are unique")
    func uniqueNames() {
        #expect(Set(FuzzTarget.all.map(\.name)).count == FuzzTarget.all.count)
    }
}
