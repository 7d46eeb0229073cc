import _SecurityKeyInternals
import SecurityKeys

extension FuzzTarget {
    /// WebAuthn JSON options as a relying party's server sends them: the bounded JSON parser
    /// (`JSONNode`), then `PublicKeyCredentialCreationOptionsJSON` and
    /// `PublicKeyCredentialRequestOptionsJSON`, then the provider requests they describe
    /// (extensions mapped to their typed inputs).
    ///
    /// Properties: a parsed document is within its limits and serializes to text that parses
    /// to the same document; tighter limits accept only what the default ones accept, the same
    /// way; options parse the same twice and keep the sizes WebAuthn sets; a request carries the
    /// options' challenge, user and credentials; a refusal is `invalid-request` with the JSON
    /// error naming the member underneath.
    static let webAuthnJSON = FuzzTarget(
        "webauthn-json", "WebAuthn JSON creation and request options, and the requests they make"
    ) {
        bytes throws(FuzzPropertyViolation) in
        let limits = JSONLimits.webAuthnOptions
        if let node = try? JSONNode.parse(bytes, limits: limits) {
            try expect(bytes.count <= limits.maximumBytes, "a document over the size limit parsed")
            try checkWithinLimits(node, limits, depth: 0)
            let text = serializedJSON(node)
            try expect(
                (try? JSONNode.parse(text, limits: limits)) == node,
                "a parsed document does not parse back from its serialization")
        }
        // Small limits reach every limit check with short inputs; what they accept, the
        // default limits accept the same.
        let small = JSONLimits(maximumBytes: 512, maximumDepth: 3, maximumStringBytes: 24, maximumElements: 6)
        if let node = try? JSONNode.parse(bytes, limits: small) {
            try checkWithinLimits(node, small, depth: 0)
            try expect((try? JSONNode.parse(bytes, limits: limits)) == node, "small limits parse differently")
        }
        try creationOptions(bytes)
        try requestOptions(bytes)
    }

    /// A relying party's origin, and a frame's top origin, for the requests.
    private static let origin = "https://example.org"
    private static let topOrigin = "https://top.example.net"

    private static func creationOptions(_ bytes: [UInt8]) throws(FuzzPropertyViolation) {
        let options: PublicKeyCredentialCreationOptionsJSON
        do {
            options = try PublicKeyCredentialCreationOptionsJSON(json: bytes)
        } catch {
            try checkRefusal(error)
            return
        }
        try expect(
            (try? PublicKeyCredentialCreationOptionsJSON(json: bytes)) == options,
            "creation options parse differently twice")
        try expect(Set([options, options]).count == 1, "equal creation options hash differently")
        try expect((1...64).contains(options.userID.count), "a user ID of \(options.userID.count) bytes")
        try expect((1...1024).contains(options.challenge.count), "a challenge of \(options.challenge.count) bytes")
        try expect(
            options.excludedCredentials.allSatisfy { (1...1023).contains($0.credentialID.count) },
            "an excluded credential ID outside 1...1023 bytes")
        for top in [nil, topOrigin] {
            let request: SecurityKeyCredentialRegistrationRequest
            do {
                request = try options.registrationRequest(origin: origin, topOrigin: top)
            } catch {
                try expect(
                    error.code == .invalidRequest || error.code == .notHandled,
                    "a registration request refused with \(error.code)")
                continue
            }
            try expect(request.challenge == options.challenge, "the request lost the challenge")
            try expect(request.userID == options.userID, "the request lost the user ID")
            try expect(
                request.relyingPartyIdentifier == (options.relyingPartyIdentifier ?? "example.org"),
                "the request's RP ID is neither the options' nor the origin's host")
            try expect(!request.credentialParameters.isEmpty, "a request without algorithms")
            try expect(
                request.excludedCredentials == options.excludedCredentials, "the request lost excluded credentials")
            try expect(
                request.timeout >= .seconds(10) && request.timeout <= .seconds(600),
                "a timeout outside 10 s to 10 min")
        }
    }

    private static func requestOptions(_ bytes: [UInt8]) throws(FuzzPropertyViolation) {
        let options: PublicKeyCredentialRequestOptionsJSON
        do {
            options = try PublicKeyCredentialRequestOptionsJSON(json: bytes)
        } catch {
            try checkRefusal(error)
            return
        }
        try expect(
            (try? PublicKeyCredentialRequestOptionsJSON(json: bytes)) == options,
            "request options parse differently twice")
        try expect(Set([options, options]).count == 1, "equal request options hash differently")
        try expect((1...1024).contains(options.challenge.count), "a challenge of \(options.challenge.count) bytes")
        for top in [nil, topOrigin] {
            let request: SecurityKeyCredentialAssertionRequest
            do {
                request = try options.assertionRequest(origin: origin, topOrigin: top)
            } catch {
                try expect(error.code == .invalidRequest, "an assertion request refused with \(error.code)")
                continue
            }
            try expect(request.challenge == options.challenge, "the request lost the challenge")
            try expect(
                request.allowedCredentials == options.allowedCredentials, "the request lost allowed credentials")
            try expect(
                request.relyingPartyIdentifier == (options.relyingPartyIdentifier ?? "example.org"),
                "the request's RP ID is neither the options' nor the origin's host")
            if let prf = request.prf, let byCredential = prf.perCredentialInputValues {
                try expect(
                    byCredential.keys.allSatisfy { Base64URL.decode(Base64URL.encode($0)) == $0 },
                    "a credential ID that does not survive base64url")
            }
        }
    }

    /// A refused document is an invalid request with the JSON error that names the member.
    private static func checkRefusal(_ error: SecurityKeyError) throws(FuzzPropertyViolation) {
        try expect(error.code == .invalidRequest, "options refused with \(error.code), not invalid-request")
        guard let json = error.webAuthnJSONError else {
            throw FuzzPropertyViolation(description: "options refused without the JSON error underneath")
        }
        try expect(
            Set([json, json]).count == 1 && json.description == error.message && !json.code.description.isEmpty,
            "a JSON error that is not itself, or says something else than the refusal")
    }

    /// Fails unless every string, container and nesting level of `node` is within `limits`.
    private static func checkWithinLimits(_ node: JSONNode, _ limits: JSONLimits, depth: Int)
        throws(FuzzPropertyViolation)
    {
        switch node {
        case .object(let members):
            try expect(depth < limits.maximumDepth, "an object nested past the depth limit")
            try expect(members.count <= limits.maximumElements, "an object over the element limit")
            try expect(Set(members.map { Array($0.0.utf8) }).count == members.count, "duplicate member names")
            for (name, value) in members {
                try expect(name.utf8.count <= limits.maximumStringBytes, "a member name over the string limit")
                try checkWithinLimits(value, limits, depth: depth + 1)
            }
        case .array(let values):
            try expect(depth < limits.maximumDepth, "an array nested past the depth limit")
            try expect(values.count <= limits.maximumElements, "an array over the element limit")
            for value in values { try checkWithinLimits(value, limits, depth: depth + 1) }
        case .string(let text):
            try expect(text.utf8.count <= limits.maximumStringBytes, "a string over the string limit")
        case .number(let text):
            try expect(text.utf8.count <= 64, "a number longer than 64 characters")
        case .bool, .null: break
        }
    }

    /// The document as compact JSON text: strings escaped as RFC 8259 §7 requires, numbers as
    /// the text they were read from.
    private static func serializedJSON(_ node: JSONNode) -> [UInt8] {
        var out: [UInt8] = []
        func string(_ text: String) {
            out.append(UInt8(ascii: "\""))
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), byte]
                case 0x00..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 15)]]
                default: out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        func value(_ node: JSONNode) {
            switch node {
            case .object(let members):
                out.append(UInt8(ascii: "{"))
                for (index, (name, member)) in members.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    string(name)
                    out.append(UInt8(ascii: ":"))
                    value(member)
                }
                out.append(UInt8(ascii: "}"))
            case .array(let values):
                out.append(UInt8(ascii: "["))
                for (index, element) in values.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    value(element)
                }
                out.append(UInt8(ascii: "]"))
            case .string(let text): string(text)
            case .number(let text): out += Array(text.utf8)
            case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
            case .null: out += Array("null".utf8)
            }
        }
        value(node)
        return out
    }
}
