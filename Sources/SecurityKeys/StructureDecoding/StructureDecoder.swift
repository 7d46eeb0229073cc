import _SecurityKeyInternals
import CBOR
import CTAP2
import Crypto

/// Decoders of captured CTAP and WebAuthn structures into JSON documents (what `securitykey
/// decode` prints, Docs/CLI.md): each document has a `kind` member; credential IDs and user
/// handles in base64url, AAGUIDs as UUIDs, other byte strings in lower-case hex; CBOR values
/// also in diagnostic notation (RFC 8949 §8).
///
/// The input is hostile: what is malformed is refused with a ``StructureDecodingError`` (or
/// the parsing module's own error, a `CTAP2Error` for a malformed authenticator data).
public enum StructureDecoder {
    /// What the bytes are (`securitykey decode --as`).
    public enum Kind: String, CaseIterable, Sendable {
        /// Any CBOR item.
        case cbor
        /// A WebAuthn attestation object.
        case attestationObject = "attestation-object"
        /// WebAuthn authenticator data.
        case authenticatorData = "authenticator-data"
        /// An authenticatorGetInfo reply.
        case getInfo = "get-info"
        /// An authenticatorMakeCredential reply.
        case makeCredentialResponse = "make-credential-response"
        /// An authenticatorGetAssertion reply.
        case getAssertionResponse = "get-assertion-response"
        /// A COSE_Key.
        case coseKey = "cose-key"
        /// WebAuthn client data JSON.
        case clientData = "client-data"
        /// A capture of 64-byte CTAPHID reports.
        case ctaphid
        /// What `register --json` prints (a WebAuthn RegistrationResponseJSON).
        case registrationResponse = "registration-response"
        /// What `authenticate --json` prints (a WebAuthn AuthenticationResponseJSON).
        case authenticationResponse = "authentication-response"
    }

    static let lenient = CBORDecoder(options: .lenient)

    /// The bytes a file to decode stands for: a file holding only hex digits and whitespace
    /// (a capture pasted as text) is read as hex, any other file as it is.
    public static func input(fromFile raw: [UInt8]) -> [UInt8] {
        let isHexText =
            !raw.isEmpty
            && raw.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) || $0 == 0x20
                    || $0 == 0x0A || $0 == 0x0D || $0 == 0x09
            }
        if isHexText, let bytes = Hex.decode(String(decoding: raw, as: UTF8.self), lenient: true) { return bytes }
        return raw
    }

    /// Decodes `bytes` as `kind`, or as what they are recognised to be when `kind` is nil: CBOR
    /// that only looked like a known structure is shown as generic CBOR, with a `note` saying
    /// why it is not that structure.
    public static func decode(_ bytes: [UInt8], as kind: Kind?) throws -> JSONValue {
        if kind != nil { return try decode(bytes, kind: kind ?? .cbor) }
        let recognised = try recognise(bytes)
        do {
            return try decode(bytes, kind: recognised)
        } catch {
            guard recognised != .cbor, recognised != .ctaphid, (try? lenient.decode(bytes)) != nil,
                case .object(let members) = try decode(bytes, kind: .cbor)
            else { throw error }
            let reason = (error as? StructureDecodingError)?.message ?? "\(error)"
            return .object(
                members + [("note", .string("Not a valid \(recognised.rawValue) (\(reason)); shown as generic CBOR."))])
        }
    }

    private static func decode(_ bytes: [UInt8], kind: Kind) throws -> JSONValue {
        let body: JSONValue
        switch kind {
        case .cbor: body = try cbor(bytes)
        case .attestationObject: body = try attestationObject(bytes)
        case .authenticatorData: body = try authenticatorData(AuthenticatorData(bytes: bytes))
        case .getInfo: body = try keyReply(bytes) { try AuthenticatorInfo(cbor: $0).json }
        case .makeCredentialResponse:
            body = try keyReply(bytes) { try makeCredentialResponse(MakeCredentialResponse(cbor: $0)) }
        case .getAssertionResponse:
            body = try keyReply(bytes) { try getAssertionResponse(GetAssertionResponse(cbor: $0)) }
        case .coseKey: body = try coseKey(COSEKey(cbor: bytes))
        case .clientData: body = try clientData(bytes)
        case .ctaphid: body = try capture(bytes)
        case .registrationResponse: body = try registrationResponse(bytes)
        case .authenticationResponse: body = try authenticationResponse(bytes)
        }
        guard case .object(var members) = body else { return body }
        switch kind {
        case .attestationObject, .getInfo, .makeCredentialResponse, .getAssertionResponse, .coseKey:
            // The CBOR as it came, for reading beside the structured fields.
            let cborBytes = kind == .attestationObject || kind == .coseKey ? bytes : try stripStatus(bytes)
            if let value = try? lenient.decode(cborBytes), !members.contains(where: { $0.0 == "diagnostic" })
            {
                members.append(("diagnostic", .string(value.diagnosticNotation)))
            }
        default: break
        }
        return .object([("kind", .string(kind.rawValue))] + members)
    }

    /// A key's reply decoded by `parse`, which reads it as the library does: strictly, CTAP2
    /// canonical CBOR only. `decode` is a diagnostic, so a reply that is well-formed but not
    /// canonical is still shown: its outer CBOR re-encoded canonically and parsed again, with
    /// `canonical: false` and the rule it broke (the library itself refuses such a reply).
    static func keyReply(_ bytes: [UInt8], _ parse: ([UInt8]) throws -> JSONValue) throws -> JSONValue {
        let body = try stripStatus(bytes)
        do {
            return try parse(body)
        } catch {
            guard (try? CBORDecoder(options: .ctap2).decode(body)) == nil, let value = try? lenient.decode(body),
                case .object(let members) = try parse(CBOREncoder.encode(value))
            else { throw error }
            return .object(members + [("canonical", .bool(false)), ("canonicalProblem", .string("\(error)"))])
        }
    }

    /// A CTAP response with its status byte: a zero status is dropped, any other is an error.
    static func stripStatus(_ bytes: [UInt8]) throws -> [UInt8] {
        guard let first = bytes.first else { throw StructureDecodingError("The input is empty.") }
        if first == 0x00 { return Array(bytes.dropFirst()) }
        if first < 0x80 || first >= 0xC0 {
            if bytes.count == 1 {
                let status = CTAPStatus(rawValue: first)
                throw StructureDecodingError(
                    "The response is only a status byte: \(status.name) (\(status.message))")
            }
        }
        return bytes
    }

    /// Guesses what the bytes are.
    public static func recognise(_ bytes: [UInt8]) throws -> Kind {
        guard let first = bytes.first(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) })
        else {
            throw StructureDecodingError("The input is empty.")
        }
        if first == UInt8(ascii: "{") {
            guard let document = try? WebAuthnResponseDocument(bytes, path: "input"), document.isObject(["response"])
            else { return .clientData }
            if document.has(["response", "attestationObject"]) { return .registrationResponse }
            if document.has(["response", "authenticatorData"]) { return .authenticationResponse }
            return .clientData
        }
        var body = bytes
        if bytes.first == 0x00, bytes.count > 1 { body = Array(bytes.dropFirst()) }
        if let value = try? lenient.decode(body) {
            if let map = value.mapValue {
                if map["fmt"] != nil, map["authData"] != nil { return .attestationObject }
                if map[1]?.arrayValue != nil, map[3]?.bytesValue?.count == 16 { return .getInfo }
                if map[1]?.stringValue != nil, map[2]?.bytesValue != nil { return .makeCredentialResponse }
                if map[2]?.bytesValue != nil, map[3]?.bytesValue != nil { return .getAssertionResponse }
                if map[1]?.intValue != nil, map[-2] != nil || map[-1] != nil { return .coseKey }
            }
            return .cbor
        }
        if bytes.count >= 37, (try? AuthenticatorData(bytes: bytes)) != nil { return .authenticatorData }
        if bytes.count >= 64, bytes.count % 64 == 0 { return .ctaphid }
        throw StructureDecodingError("The input is not recognised; say what it is with --as.")
    }

    static func cbor(_ bytes: [UInt8]) throws -> JSONValue {
        let value: CBORValue
        do { value = try lenient.decode(bytes) } catch {
            throw StructureDecodingError("The input is not valid CBOR: \(error)")
        }
        let canonical = (try? CBORDecoder(options: .ctap2).decode(bytes)) != nil
        return .object([
            ("diagnostic", .string(value.diagnosticNotation)),
            ("value", .cbor(value, bytes: .hex)),
            ("canonical", .bool(canonical)),
        ])
    }

    static func attestationObject(_ bytes: [UInt8]) throws -> JSONValue {
        let object = try AttestationObject(cbor: bytes)
        return .object([
            ("fmt", .string(object.format.rawValue)),
            ("attStmt", .cbor(.map(object.attestationStatement), bytes: .hex)),
            ("attStmtDiagnostic", .string(CBORValue.map(object.attestationStatement).diagnosticNotation)),
            ("authData", try authenticatorData(object.authData)),
        ])
    }

    static func authenticatorData(_ data: AuthenticatorData) throws -> JSONValue {
        let f = data.flags
        return .members([
            ("rpIdHash", .string(Hex.encode(data.rpIDHash))),
            ("flags", .integer(Int64(f.rawValue))),
            (
                "flagBits",
                .object([
                    ("UP", .bool(f.contains(.userPresent))), ("UV", .bool(f.contains(.userVerified))),
                    ("BE", .bool(f.contains(.backupEligible))), ("BS", .bool(f.contains(.backedUp))),
                    ("AT", .bool(f.contains(.attestedCredentialData))),
                    ("ED", .bool(f.contains(.extensionData))),
                ])
            ),
            ("signCount", .integer(Int64(data.signCount))),
            (
                "attestedCredentialData",
                try data.attestedCredentialData.map { c in
                    .object([
                        ("aaguid", .string(c.aaguid.description.lowercased())),
                        ("credentialId", .string(Base64URL.encode(c.credentialID))),
                        ("credentialPublicKey", try coseKey(c.credentialPublicKey)),
                    ])
                }
            ),
            ("extensions", data.extensions.map { .cbor(.map($0), bytes: .hex) }),
        ])
    }

    static func coseKey(_ key: COSEKey) throws -> JSONValue {
        let exported = try? key.publicKey()
        return .members([
            ("kty", .integer(Int64(key.keyType.rawValue))),
            ("ktyName", .string(key.keyType.description)),
            ("alg", key.algorithm.map { .integer(Int64($0.rawValue)) }),
            ("algName", key.algorithm.map { .string($0.description) }),
            ("crv", key.curve.map { .integer(Int64($0.rawValue)) }),
            ("crvName", key.curve.map { .string($0.description) }),
            ("diagnostic", .string(CBORValue.map(key.parameters).diagnosticNotation)),
            ("spki", exported.map { .string(Hex.encode($0.spkiDERRepresentation)) }),
            ("publicKeyPEM", exported.map { .string($0.pemRepresentation) }),
        ])
    }

    static func makeCredentialResponse(_ r: MakeCredentialResponse) throws -> JSONValue {
        .members([
            ("fmt", .string(r.format.rawValue)),
            ("authData", try authenticatorData(r.authData)),
            ("attStmt", .cbor(.map(r.attestationStatement), bytes: .hex)),
            ("attStmtDiagnostic", .string(CBORValue.map(r.attestationStatement).diagnosticNotation)),
            ("epAtt", r.enterpriseAttestation.map(JSONValue.bool)),
            ("largeBlobKey", r.largeBlobKey.map { .string(Hex.encode($0)) }),
            ("unsignedExtensionOutputs", r.unsignedExtensionOutputs.map { .cbor(.map($0), bytes: .hex) }),
        ])
    }

    static func getAssertionResponse(_ r: GetAssertionResponse) throws -> JSONValue {
        .members([
            (
                "credential",
                r.credential.map { c in
                    .object([("type", .string(c.type)), ("id", .string(Base64URL.encode(c.id)))])
                }
            ),
            ("authData", try authenticatorData(r.authData)),
            ("signature", .string(Hex.encode(r.signature))),
            (
                "user",
                r.user.map { u in
                    .members([
                        ("id", .string(Base64URL.encode(u.id))), ("name", u.name.map(JSONValue.string)),
                        ("displayName", u.displayName.map(JSONValue.string)),
                    ])
                }
            ),
            ("numberOfCredentials", r.numberOfCredentials.map { .unsigned($0) }),
            ("userSelected", r.userSelected.map(JSONValue.bool)),
            ("largeBlobKey", r.largeBlobKey.map { .string(Hex.encode($0)) }),
        ])
    }

    /// A WebAuthn response JSON object with a `response` member, read by
    /// ``PublicKeyCredentialJSON``'s parser.
    static func responseDocument(_ bytes: [UInt8], kind: String) throws -> WebAuthnResponseDocument {
        guard let document = try? WebAuthnResponseDocument(bytes, path: "input"), document.isObject(["response"]) else {
            throw StructureDecodingError("The input is not a WebAuthn \(kind) JSON object with a response member.")
        }
        return document
    }

    /// The bytes of a base64url member of the response, or nil when it is absent or null.
    static func base64URLMember(_ document: WebAuthnResponseDocument, _ name: String) throws -> [UInt8]? {
        switch document.value(["response", name]) {
        case nil, .null?: return nil
        case .string(let text)?:
            if let bytes = Base64URL.decode(text) { return bytes }
        default: break
        }
        throw StructureDecodingError("The member \(name) is not base64url.")
    }

    /// The identifying members both response kinds share: `id` (checked against `rawId`),
    /// `type`, `authenticatorAttachment`, and the decoded client data where there is one.
    static func commonResponseMembers(_ document: WebAuthnResponseDocument) throws -> [(String, JSONValue)] {
        guard let id = document.string("id"), Base64URL.decode(id) != nil else {
            throw StructureDecodingError("The response's id is missing or not base64url.")
        }
        if let rawID = document.string("rawId"), Base64URL.decode(rawID) != Base64URL.decode(id) {
            throw StructureDecodingError("The response's rawId and id name different credentials.")
        }
        var members: [(String, JSONValue)] = [("id", .string(id))]
        if let type = document.string("type") { members.append(("type", .string(type))) }
        if let attachment = document.string("authenticatorAttachment") {
            members.append(("authenticatorAttachment", .string(attachment)))
        }
        members.append(("clientData", try base64URLMember(document, "clientDataJSON").map(clientData) ?? .null))
        return members
    }

    /// `register --json` output (WebAuthn L3 §5.1 RegistrationResponseJSON): the client data and
    /// the attestation object decoded, and whether the new credential's ID is the response's `id`.
    static func registrationResponse(_ bytes: [UInt8]) throws -> JSONValue {
        let document = try responseDocument(bytes, kind: "registration")
        guard let objectBytes = try base64URLMember(document, "attestationObject") else {
            throw StructureDecodingError("The registration response has no attestationObject.")
        }
        var members = try commonResponseMembers(document)
        let object = try AttestationObject(cbor: objectBytes)
        let newID = object.authData.attestedCredentialData?.credentialID
        members.append(("attestationObject", try attestationObject(objectBytes)))
        members.append(
            (
                "idMatchesAuthenticatorData",
                .bool(newID != nil && newID == document.string("id").flatMap(Base64URL.decode))
            ))
        if case .array(let items)? = document.value(["response", "transports"]) {
            let transports = items.compactMap { item -> JSONValue? in
                guard case .string(let name) = item else { return nil }
                return .string(name)
            }
            // Listed only when every entry is a string.
            if transports.count == items.count { members.append(("transports", .array(transports))) }
        }
        return .object(members)
    }

    /// `authenticate --json` output (WebAuthn L3 §5.1 AuthenticationResponseJSON): the client
    /// data and authenticator data decoded, the signature in hex, the user handle as given.
    static func authenticationResponse(_ bytes: [UInt8]) throws -> JSONValue {
        let document = try responseDocument(bytes, kind: "authentication")
        guard let authData = try base64URLMember(document, "authenticatorData") else {
            throw StructureDecodingError("The authentication response has no authenticatorData.")
        }
        guard let signature = try base64URLMember(document, "signature") else {
            throw StructureDecodingError("The authentication response has no signature.")
        }
        var members = try commonResponseMembers(document)
        members.append(("authenticatorData", try authenticatorData(AuthenticatorData(bytes: authData))))
        members.append(("signature", .string(Hex.encode(signature))))
        let userHandle = try base64URLMember(document, "userHandle")
        members.append(("userHandle", userHandle.map { .string(Base64URL.encode($0)) } ?? .null))
        return .object(members)
    }

    /// Client data as browsers and the provider write it (WebAuthn L3 §5.8.1), read by the
    /// bounded JSON parser: at most 1 MiB, nesting of 32.
    static let clientDataLimits = JSONLimits(
        maximumBytes: 1 << 20, maximumDepth: 32, maximumStringBytes: 1 << 20, maximumElements: 4096)

    static func clientData(_ bytes: [UInt8]) throws -> JSONValue {
        guard case .object(let pairs)? = try? JSONNode.parse(bytes, limits: clientDataLimits),
            let object = try? JSONMembers(.object(pairs), path: "")
        else {
            throw StructureDecodingError("The client data is not a JSON object.")
        }
        guard let type = try? object.string("type"), let challenge = try? object.string("challenge"),
            let origin = try? object.string("origin")
        else {
            throw StructureDecodingError(
                "The client data lacks type, challenge or origin (WebAuthn L3 §5.8.1).")
        }
        guard let challengeBytes = Base64URL.decode(challenge) else {
            throw StructureDecodingError("The client data's challenge is not base64url.")
        }
        var members: [(String, JSONValue)] = [
            ("type", .string(type)), ("challenge", .string(challenge)),
            ("challengeHex", .string(Hex.encode(challengeBytes))),
            ("origin", .string(origin)),
        ]
        if let cross = try? object.bool("crossOrigin") { members.append(("crossOrigin", .bool(cross))) }
        if let top = try? object.string("topOrigin") { members.append(("topOrigin", .string(top))) }
        let known: Set = ["type", "challenge", "origin", "crossOrigin", "topOrigin"]
        let others = pairs.map(\.0).filter { !known.contains($0) }.sorted()
        if !others.isEmpty { members.append(("otherMembers", .array(others.map(JSONValue.string)))) }
        members.append(("hash", .string(Hex.encode(SHA256.hash(data: bytes)))))
        return .object(members)
    }
}
