import CBOR
import Foundation
import Testing

/// The codec against python-fido2: its CTAP2 responses and its canonical encoder's output.
@Suite struct PythonFido2Tests {
    static let strict = CBORDecoder(options: .ctap2)
    static let lenient = CBORDecoder(options: .lenient)

    static let responses = VectorFiles.fidoResponses

    /// Maps with keys of mixed major types, written by `fido2.cbor.encode` (see generate.py).
    static let canonicalMaps: [[UInt8]] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("PythonFido2/canonical-maps.json")
        guard let data = try? Data(contentsOf: url), let file = try? NotationParser.parse([UInt8](data))
        else {
            return []
        }
        return file["hex"]?.elements.compactMap { $0.string.flatMap(Hex.bytes) } ?? []
    }()

    @Test func vectorsLoad() {
        #expect(Self.responses.count == 8)
        #expect(Self.canonicalMaps.count == 300)
    }

    @Test(arguments: responses)
    func responseDecodesAsPythonFido2Does(_ vector: FIDOResponseVector) throws {
        let value = try Self.lenient.decode(vector.bytes)
        #expect(value.diagnosticNotation == vector.diagnostic)
        // Strict decoding succeeds exactly when the bytes are the canonical encoding.
        let canonical = CBOREncoder.encode(value)
        if canonical == vector.bytes {
            #expect(try Self.strict.decode(vector.bytes) == value)
        } else {
            #expect(throws: CBORError.self) { try Self.strict.decode(vector.bytes) }
        }
    }

    /// python-fido2's test_client `_MC_RESP` writes authData's length as `59 00c4`; its
    /// test_ctap2 `_MC_RESP` is the same response as python-fido2 re-encodes it.
    @Test func nonShortestLengthFromARealResponse() throws {
        let loose = try #require(Self.responses.first { $0.id == "python-fido2/test_client/module/_MC_RESP" })
        let tight = try #require(Self.responses.first { $0.id == "python-fido2/test_ctap2/module/_MC_RESP" })
        let error = #expect(throws: CBORError.self) { try Self.strict.decode(loose.bytes) }
        #expect(error?.code == .nonCanonicalEncoding)
        #expect(error?.offset == 10)
        let value = try Self.lenient.decode(loose.bytes)
        #expect(CBOREncoder.encode(value) == tight.bytes)
        #expect(try Self.strict.decode(tight.bytes) == value)
    }

    @Test(arguments: canonicalMaps)
    func canonicalOrderAgreesWithPythonFido2(_ bytes: [UInt8]) throws {
        let value = try Self.strict.decode(bytes)
        #expect(CBOREncoder.encode(value) == bytes)
    }
}
