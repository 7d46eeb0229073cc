import CBOR
import SecurityKeys

extension FuzzTarget {
    /// `securitykey decode`'s decoders (`StructureDecoder`): the first byte picks the kind (or,
    /// past the last kind, leaves it to recognition), the rest is the input; the same input is
    /// also read as a file to decode (`StructureDecoder.input(fromFile:)`, hex text or bytes)
    /// and as a WebAuthn response document (`WebAuthnResponseDocument`, `verify`'s input).
    ///
    /// Properties: a decoded document is a JSON object whose first member is `kind`, naming the
    /// kind asked for (or recognised); decoding is deterministic; a document member decodes as
    /// base64url or is refused with a sentence.
    static let structureDecoder = FuzzTarget(
        "structure-decoder", "decode's decoders (CBOR, CTAP replies, WebAuthn structures) and response documents"
    ) {
        bytes throws(FuzzPropertyViolation) in
        guard let selector = bytes.first else { return }
        let input = Array(bytes.dropFirst())
        let kinds = StructureDecoder.Kind.allCases
        let kind = Int(selector) < kinds.count ? kinds[Int(selector)] : nil
        if let document = try? StructureDecoder.decode(input, as: kind) {
            guard case .object(let members) = document, let first = members.first, first.0 == "kind",
                case .string(let name) = first.1
            else { throw FuzzPropertyViolation(description: "a decoded document does not start with its kind") }
            if let kind { try expect(name == kind.rawValue, "asked for \(kind.rawValue), got \(name)") }
            try expect(StructureDecoder.Kind(rawValue: name) != nil, "an unknown kind \(name)")
            try expect(
                (try? StructureDecoder.decode(input, as: kind))?.text() == document.text(),
                "the same input decodes differently")
        }
        // A file's bytes: hex text becomes what it spells (never more bytes than the text had).
        let fromFile = StructureDecoder.input(fromFile: input)
        try expect(fromFile.count <= input.count, "a file read as more bytes than it holds")
        if let document = try? WebAuthnResponseDocument(input, path: "input") {
            for path in [["response", "attestationObject"], ["response", "clientDataJSON"], ["id"]] {
                switch Result(catching: { () throws(StructureDecodingError) in try document.binary(path) }) {
                case .success: try expect(document.has(path), "a member decoded that is not there")
                case .failure(let error): try expect(!error.message.isEmpty, "a refusal without a sentence")
                }
            }
            _ = document.string("rpId")
        }
    }
}
