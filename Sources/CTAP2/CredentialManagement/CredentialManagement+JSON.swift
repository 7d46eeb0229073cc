import _SecurityKeyInternals
import CBOR

extension CredentialManagement.Credential {
    /// The credential of `relyingParty` as a JSON document (`securitykey credentials list
    /// --json`, Docs/CLI.md): RP ID and name, user ID (base64url), user and display names,
    /// credential ID (base64url), credProtect level (or null), whether it has a largeBlobKey, and
    /// whether it is a thirdPartyPayment credential (null from keys before CTAP 2.2).
    public func json(relyingParty: RelyingPartyEntity) -> JSONValue {
        .members([
            ("rpId", .string(relyingParty.id)),
            ("rpName", relyingParty.name.map(JSONValue.string) ?? .null),
            ("userId", .string(Base64URL.encode(user.id))),
            ("userName", user.name.map(JSONValue.string) ?? .null),
            ("displayName", user.displayName.map(JSONValue.string) ?? .null),
            ("credentialId", .string(Base64URL.encode(credentialID.id))),
            ("credProtect", credProtect.map { .integer(Int64(clamping: $0)) } ?? .null),
            ("largeBlobKey", .bool(largeBlobKey != nil)),
            ("thirdPartyPayment", thirdPartyPayment.map(JSONValue.bool) ?? .null),
        ])
    }
}

extension CredentialManagement.Credential {
    /// The credential in one line, for people: its ID (base64url), user name, display name
    /// where it differs, credProtect level, whether it has a largeBlobKey and whether it is a
    /// thirdPartyPayment credential.
    public var summary: String {
        var line = "  \(Base64URL.encode(credentialID.id))  \(user.name ?? "(no name)")"
        if let display = user.displayName, display != user.name { line += " (\(display))" }
        if let level = credProtect { line += "  credProtect \(level)" }
        if largeBlobKey != nil { line += "  largeBlobKey" }
        if thirdPartyPayment == true { line += "  thirdPartyPayment" }
        return line
    }
}
