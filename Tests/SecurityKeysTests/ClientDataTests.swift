import _SecurityKeyInternals
import Crypto
import Foundation
import Testing

@testable import SecurityKeys

/// W3C WebAuthn L3 test vectors: each registration and authentication case's challenge and the
/// clientDataJSON the spec's generator produced for origin https://example.org.
struct ClientDataTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var id: String
        var challenge: [UInt8]
        var clientDataJSON: [UInt8]
        var testDescription: String { id }
    }

    static let cases: [Case] = {
        guard let entries = try? VectorEntry.load("webauthn-spec.json") else { return [] }
        var challenges: [String: [UInt8]] = [:]
        var out: [Case] = []
        for entry in entries {
            let prefix = entry.id.components(separatedBy: "/").dropLast().joined(separator: "/")
            if entry.kind == "challenge" { challenges[prefix] = entry.bytes }
            if entry.kind == "clientDataJSON", let challenge = challenges[prefix] {
                out.append(Case(id: prefix, challenge: challenge, clientDataJSON: entry.bytes))
            }
        }
        return out
    }()

    @Test func vectorsArePresent() {
        #expect(Self.cases.count == 30)
    }

    /// Vectors without the spec generator's random `extraData` member are reproduced byte for
    /// byte; the others must agree on every member we produce.
    @Test(arguments: cases)
    func clientDataJSONMatchesSpec(_ vector: Case) throws {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(vector.clientDataJSON)) as? [String: Any])
        let type = try #require(object["type"] as? String)
        let data = CollectedClientData(
            type: .init(rawValue: type), challenge: vector.challenge,
            origin: try #require(object["origin"] as? String),
            crossOrigin: try #require(object["crossOrigin"] as? Bool),
            topOrigin: object["topOrigin"] as? String)
        #expect(object["challenge"] as? String == Base64URL.encode(vector.challenge))
        if object["extraData"] == nil {
            #expect(data.json == vector.clientDataJSON)
            #expect(data.hash == Array(SHA256.hash(data: vector.clientDataJSON)))
        } else {
            // The generator appends extraData last; without it the bytes must be ours exactly.
            let text = String(decoding: vector.clientDataJSON, as: UTF8.self)
            let range = try #require(text.range(of: ",\"extraData\":"))
            #expect(String(decoding: data.json, as: UTF8.self) == text[..<range.lowerBound] + "}")
        }
    }

    @Test func escapingFollowsCCDToString() {
        let data = CollectedClientData(
            type: .get, challenge: [0xFB, 0xFF], origin: "https://a\"b\\c\u{1}.example")
        #expect(
            String(decoding: data.json, as: UTF8.self)
                == #"{"type":"webauthn.get","challenge":"-_8","origin":"https://a\"b\\c\u0001.example","crossOrigin":false}"#
        )
    }
}
