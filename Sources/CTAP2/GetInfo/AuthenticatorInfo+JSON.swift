import _SecurityKeyInternals
import CBOR

extension AuthenticatorInfo {
    /// getInfo as JSON with the CTAP 2.2 §6.4 member names; byte strings in hex, the AAGUID
    /// as a lower-case hyphenated UUID, members the library does not know under their key.
    public var json: JSONValue {
        func uint(_ v: UInt64?) -> JSONValue? { v.map { JSONValue.unsigned($0) } }
        func texts(_ v: [String]?) -> JSONValue? { v.map { JSONValue.array($0.map { .string($0) }) } }
        func uints(_ v: [UInt64]?) -> JSONValue? { v.map { JSONValue.array($0.map { .unsigned($0) }) } }
        func bytes(_ v: [UInt8]?) -> JSONValue? { v.map { JSONValue.string(Hex.encode($0)) } }
        var unknown: [(String, JSONValue)] = []
        for entry in unknownFields {
            let name = entry.key.intValue.map(String.init) ?? entry.key.diagnosticNotation
            unknown.append((name, .cbor(entry.value, bytes: .hex)))
        }
        return .members([
            ("versions", texts(versions.map(\.rawValue))),
            ("extensions", texts(extensions.map(\.rawValue))),
            ("aaguid", .string(aaguid.description.lowercased())),
            (
                "options",
                .object(options.sorted { $0.key < $1.key }.map { ($0.key.rawValue, JSONValue.bool($0.value)) })
            ),
            ("maxMsgSize", uint(maxMsgSize)),
            ("pinUvAuthProtocols", uints(pinUVAuthProtocols)),
            ("maxCredentialCountInList", uint(maxCredentialCountInList)),
            ("maxCredentialIdLength", uint(maxCredentialIDLength)),
            ("transports", texts(transports)),
            (
                "algorithms",
                .array(
                    algorithms.map {
                        .object([("type", .string($0.type)), ("alg", .integer(Int64($0.algorithm.rawValue)))])
                    })
            ),
            ("maxSerializedLargeBlobArray", uint(maxSerializedLargeBlobArray)),
            ("forcePINChange", forcePINChange.map(JSONValue.bool)),
            ("minPINLength", uint(minPINLength)),
            ("firmwareVersion", uint(firmwareVersion)),
            ("maxCredBlobLength", uint(maxCredBlobLength)),
            ("maxRPIDsForSetMinPINLength", uint(maxRPIDsForSetMinPINLength)),
            ("preferredPlatformUvAttempts", uint(preferredPlatformUVAttempts)),
            ("uvModality", uint(uvModality)),
            (
                "certifications",
                certifications.map { c in
                    .object(c.sorted { $0.key < $1.key }.map { ($0.key, .integer(Int64($0.value))) })
                }
            ),
            ("remainingDiscoverableCredentials", uint(remainingDiscoverableCredentials)),
            ("vendorPrototypeConfigCommands", uints(vendorPrototypeConfigCommands)),
            ("attestationFormats", texts(attestationFormats)),
            ("uvCountSinceLastPinEntry", uint(uvCountSinceLastPINEntry)),
            ("longTouchForReset", longTouchForReset.map(JSONValue.bool)),
            ("encIdentifier", bytes(encIdentifier)),
            ("transportsForReset", texts(transportsForReset)),
            ("pinComplexityPolicy", pinComplexityPolicy.map(JSONValue.bool)),
            (
                "pinComplexityPolicyURL",
                pinComplexityPolicyURL.map { JSONValue.string(String(decoding: $0, as: UTF8.self)) }
            ),
            ("maxPINLength", uint(maxPINLength)),
            ("encCredStoreState", bytes(encCredStoreState)),
            ("authenticatorConfigCommands", uints(authenticatorConfigCommands)),
            ("unknownFields", unknown.isEmpty ? nil : .object(unknown)),
        ])
    }
}

extension AuthenticatorInfo {
    /// getInfo of the key at `device` as `securitykey info --json` prints it (Docs/CLI.md): the
    /// device, its `model` name (null when unknown) and whether it is U2F-only first, then
    /// ``json``'s members, then the PIN and UV attempts left where they were read.
    public func json(device: String, model: String?, pinRetries: ClientPIN.PINRetries?, uvRetries: Int?) -> JSONValue {
        guard case .object(var members) = json else { return json }
        members.insert(("device", .string(device)), at: 0)
        members.insert(("model", model.map(JSONValue.string) ?? .null), at: 1)
        members.insert(("u2fOnly", .bool(isU2FOnly)), at: 2)
        if let pinRetries {
            members.append(("pinRetries", .integer(Int64(pinRetries.retries))))
            if let p = pinRetries.powerCycleRequired { members.append(("powerCycleRequired", .bool(p))) }
        }
        if let uvRetries { members.append(("uvRetries", .integer(Int64(uvRetries)))) }
        return .object(members)
    }
}
