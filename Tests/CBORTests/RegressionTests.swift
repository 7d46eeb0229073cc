import CBOR
import Foundation
import Testing

/// Replays every file in Regressions/: inputs the fuzzer found or that were written to stress
/// the limits. None may trap; whatever decodes must survive a round trip.
@Suite struct RegressionTests {
    static let files: [URL] = {
        guard let directory = Bundle.module.url(forResource: "Regressions", withExtension: nil),
            let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path)
        else { return [] }
        return names.filter { !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0) }
    }()

    @Test func seedFilesArePresent() {
        #expect(Self.files.count >= 6)
    }

    @Test(arguments: files)
    func replay(_ file: URL) throws {
        let bytes = try [UInt8](Data(contentsOf: file))
        let canonical = CBORDecoder(options: .init(requireCanonical: true, allowTags: true))
        for options in [CBORDecoder.Options.ctap2, .lenient] {
            guard let value = try? CBORDecoder(options: options).decode(bytes) else { continue }
            let encoded = CBOREncoder.encode(value)
            #expect(try canonical.decode(encoded) == value)
            if options.requireCanonical { #expect(encoded == bytes) }
            _ = value.diagnosticNotation
            _ = value.jsonText()
        }
    }
}
