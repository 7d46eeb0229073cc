import Foundation
import Testing

@testable import CTAPHID

/// The report descriptors of python-fido2's test_hid.py, with that test's expectations.
@Suite struct HIDReportDescriptorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var id: String
        var hex: String
        /// nil when python-fido2 expects the parser to raise.
        var expectedSizes: (input: Int, output: Int)?
        var testDescription: String { id }
    }

    static func cases() throws -> [Case] {
        try Vectors.pythonFIDO2().compactMap { entry -> Case? in
            guard entry["kind"] as? String == "hid-report-descriptor",
                let id = entry["id"] as? String, let hex = entry["hex"] as? String,
                let expected = entry["expected"] as? [String: Any],
                let code = (expected["test_code"] as? [[String: Any]])?.first?["source"] as? String
            else { return nil }
            if code.contains("pytest.raises") { return Case(id: id, hex: hex, expectedSizes: nil) }
            func number(after marker: String) -> Int? {
                guard let range = code.range(of: marker) else { return nil }
                return Int(code[range.upperBound...].prefix { $0.isNumber })
            }
            guard let input = number(after: "max_in_size == "), let output = number(after: "max_out_size == ")
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
