import Foundation
import Testing

@testable import CTAPHID

/// The report descriptors of python-fido2's test_hid.py, with the sizes the vector file states.
@Suite struct HIDReportDescriptorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var id: String
        var hex: String
        /// nil when python-fido2 expects the parser to raise.
        var expectedSizes: (input: Int, output: Int)?
        var testDescription: String { id }
    }

    /// Reads the expectations the vector file states as data (`expected.stated`).
    static func cases() throws -> [Case] {
        try Vectors.pythonFIDO2().compactMap { entry -> Case? in
            guard entry["kind"] as? String == "hid-report-descriptor",
                let id = entry["id"] as? String, let hex = entry["hex"] as? String,
                let stated = (entry["expected"] as? [String: Any])?["stated"] as? [String: Any]
            else { return nil }
            if stated["parser_raises"] as? Bool == true { return Case(id: id, hex: hex, expectedSizes: nil) }
            guard let input = stated["max_in_size"] as? Int, let output = stated["max_out_size"] as? Int
            else { return nil }
            return Case(id: id, hex: hex, expectedSizes: (input, output))
        }
    }

    @Test func vectorsArePresent() throws {
        let all = try Self.cases()
        #expect(all.count >= 2)
        #expect(all.contains { $0.expectedSizes == nil })
        #expect(all.contains { $0.expectedSizes != nil })
    }

    @Test(arguments: try cases())
    func parsesLikePythonFIDO2(_ vector: Case) {
        let bytes = Hex.decode(vector.hex)
        if let sizes = vector.expectedSizes {
            let parsed = try? HIDReportDescriptor(bytes: bytes)
            #expect(parsed?.maxInputReportSize == sizes.input)
            #expect(parsed?.maxOutputReportSize == sizes.output)
        } else {
            #expect(throws: CTAPHIDError.self) { try HIDReportDescriptor(bytes: bytes) }
        }
    }

    @Test func truncatedDescriptorIsRejected() {
        // Usage Page with a two-byte value but only one byte left.
        #expect(throws: CTAPHIDError.self) { try HIDReportDescriptor(bytes: [0x06, 0xD0]) }
    }
}
