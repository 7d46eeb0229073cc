import Foundation
import VectorFiles
import Testing

/// One entry of Tests/Vectors/*.json, reduced to what these tests read.
struct Vector: Sendable, CustomTestStringConvertible, IdentifiedVector {
    var id: String
    var kind: String
    var bytes: [UInt8]
    /// The UP and UV bits the vector's `decoded.authData.flags_bits` states.
    var userPresent: Bool?
    var userVerified: Bool?
    /// The signature counter the vector's `decoded.authData` states.
    var signCount: UInt32?
    /// What the vector's `decoded.clientDataJSON` states.
    var crossOrigin: Bool?
    var topOrigin: String?
    var origin: String?

    var testDescription: String { id }
}

enum Vectors {
    static func load(_ file: String) -> [Vector] {
        VectorFiles.repositoryEntries(file).map { entry in
            let decoded = entry.fields["decoded"] as? [String: Any]
            let authData = decoded?["authData"] as? [String: Any]
            let flags = authData?["flags_bits"] as? [String: Any]
            let clientData = decoded?["clientDataJSON"] as? [String: Any]
            return Vector(
                id: entry.id, kind: entry.kind, bytes: entry.bytes, userPresent: flags?["UP"] as? Bool,
                userVerified: flags?["UV"] as? Bool,
                signCount: (authData?["signCount"] as? Int).flatMap { UInt32(exactly: $0) },
                crossOrigin: clientData?["crossOrigin"] as? Bool,
                topOrigin: clientData?["topOrigin"] as? String, origin: clientData?["origin"] as? String)
        }
    }

    static let pythonFIDO2 = load("python-fido2-vectors.json")
    static let webAuthn = load("webauthn-spec.json")

    static func python(_ suffix: String) -> Vector? { pythonFIDO2.python(suffix) }
    static func w3c(_ group: String, _ name: String) -> Vector? { webAuthn.w3c(group, name) }
    static var w3cGroups: [String] { webAuthn.w3cGroups }
}

/// A copy of `bytes` with one byte changed.
func flipped(_ bytes: [UInt8], at index: Int? = nil) -> [UInt8] {
    var copy = bytes
    let i = index ?? copy.count / 2
    copy[i] ^= 0x01
    return copy
}
