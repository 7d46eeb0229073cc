import _SecurityKeyInternals
import CBOR
import CTAP2
import Crypto

/// The one WebAuthn L3 PublicKeyCredential JSON codec (§5.1 `RegistrationResponseJSON` and
/// `AuthenticationResponseJSON`, what `PublicKeyCredential.toJSON()` gives): a registration or an
/// assertion written as that JSON, and that JSON read back into the typed value. Binary members
/// are base64url; the client extension results are written with their members sorted by name,
/// on one line.
///
/// Written members come in this order: `id`, `rawId`, `type`, `authenticatorAttachment`,
/// `response` (`clientDataJSON` first), `clientExtensionResults`, then the caller's `beside`
/// members; `JSONValue.sortedMembers()` gives the name-sorted form (``SecurityKeyCredentialRegistration/webAuthnJSON``).
public enum PublicKeyCredentialJSON {
    /// The L3 members of `AuthenticatorAttestationResponseJSON` taken from the parsed
    /// attestation: the authenticator data, the credential public key as SubjectPublicKeyInfo
    /// DER, and its COSE algorithm.
    public struct AttestedKey: Sendable {
        public var authenticatorData: [UInt8]
        public var publicKey: [UInt8]
        public var algorithm: Int?

        /// Creates the members.
        public init(authenticatorData: [UInt8], publicKey: [UInt8], algorithm: Int?) {
            self.authenticatorData = authenticatorData
            self.publicKey = publicKey
            self.algorithm = algorithm
        }
    }

    /// Documents accepted by the readers: 1 MiB, depth 16 (the response's own nesting is 4).
    public static let limits = JSONLimits(
        maximumBytes: 1 << 20, maximumDepth: 16, maximumStringBytes: 1 << 20, maximumElements: 1024)

    // MARK: Writing

    /// `registration` as a RegistrationResponseJSON; `attestedKey`'s members join `response`
    /// (`authenticatorData` after `attestationObject`, `publicKey` and `publicKeyAlgorithm` after
    /// `transports`), and `beside` follows the standard members.
    public static func registration(
        _ registration: SecurityKeyCredentialRegistration, attestedKey: AttestedKey? = nil,
        beside: [(String, JSONValue?)] = []
    ) -> JSONValue {
        credential(
            id: registration.credentialID, clientDataJSON: registration.rawClientDataJSON,
            response: [
                ("attestationObject", base64url(registration.rawAttestationObject)),
                ("authenticatorData", attestedKey.map { base64url($0.authenticatorData) }),
                ("transports", .array(registration.transports.map { .string($0.rawValue) })),
                ("publicKey", attestedKey.map { base64url($0.publicKey) }),
                ("publicKeyAlgorithm", attestedKey?.algorithm.map { .integer(Int64($0)) }),
            ],
            clientExtensionResults: clientExtensionResults(registration), beside: beside)
    }

    /// `assertion` as an AuthenticationResponseJSON; an absent user handle is left out, or
    /// written as `absentUserHandle` when given (`null`), and `beside` follows the standard members.
    public static func assertion(
        _ assertion: SecurityKeyCredentialAssertion, absentUserHandle: JSONValue? = nil,
        beside: [(String, JSONValue?)] = []
    ) -> JSONValue {
        credential(
            id: assertion.credentialID, clientDataJSON: assertion.rawClientDataJSON,
            response: [
                ("authenticatorData", base64url(assertion.rawAuthenticatorData)),
                ("signature", base64url(assertion.signature)),
                ("userHandle", assertion.userID.map(base64url) ?? absentUserHandle),
            ],
            clientExtensionResults: clientExtensionResults(assertion), beside: beside)
    }

    /// The registration's client extension outputs (§5.8 `AuthenticationExtensionsClientOutputs`).
    public static func clientExtensionResults(_ registration: SecurityKeyCredentialRegistration) -> JSONValue {
        let prf = registration.prf.map { prf in
            JSONValue.members([
                ("enabled", .bool(prf.isSupported)),
                ("results", prf.first.map { prfResults(first: $0, second: prf.second) }),
            ])
        }
        return .members([
            ("appidExclude", registration.appIDExclude.map(JSONValue.bool)),
            ("credBlob", registration.credentialBlobStored.map(JSONValue.bool)),
            ("credProps", registration.credentialProperties.map { .members([("rk", $0.residentKey.map(JSONValue.bool))]) }),
            ("hmacCreateSecret", registration.hmacCreateSecret.map(JSONValue.bool)),
            ("largeBlob", registration.largeBlob.map { .object([("supported", .bool($0.isSupported))]) }),
            ("prf", prf),
        ])
    }

    /// The assertion's client extension outputs (§5.8 `AuthenticationExtensionsClientOutputs`).
    public static func clientExtensionResults(_ assertion: SecurityKeyCredentialAssertion) -> JSONValue {
        let hmac = assertion.hmacGetSecret.map { output in
            JSONValue.members([
                ("output1", base64url(output.output1.bytes)), ("output2", output.output2.map { base64url($0.bytes) }),
            ])
        }
        let largeBlob = assertion.largeBlob.map { output in
            JSONValue.members([("blob", output.readData.map(base64url)), ("written", output.didWrite.map(JSONValue.bool))])
        }
        return .members([
            ("appid", assertion.appID || assertion.appIDRequested ? .bool(assertion.appID) : nil),
            ("getCredBlob", assertion.credentialBlob.map(base64url)),
            ("hmacGetSecret", hmac),
            ("largeBlob", largeBlob),
            ("prf", assertion.prf.map { .object([("results", prfResults(first: $0.first, second: $0.second))]) }),
        ])
    }

    static func credential(
        id: [UInt8], clientDataJSON: [UInt8]?, response: [(String, JSONValue?)], clientExtensionResults: JSONValue,
        beside: [(String, JSONValue?)]
    ) -> JSONValue {
        let text = base64url(id)
        return .members(
            [
                ("id", text), ("rawId", text), ("type", "public-key"), ("authenticatorAttachment", "cross-platform"),
                ("response", .members([("clientDataJSON", clientDataJSON.map(base64url))] + response)),
                // Kept on one line in pretty-printed output, as `--json` has always shown it.
                ("clientExtensionResults", .raw(clientExtensionResults.text())),
            ] + beside)
    }

    static func prfResults(first: SymmetricKey, second: SymmetricKey?) -> JSONValue {
        .members([("first", base64url(first.bytes)), ("second", second.map { base64url($0.bytes) })])
    }

    static func base64url(_ bytes: [UInt8]) -> JSONValue { .string(Base64URL.encode(bytes)) }

    // MARK: Reading

    /// Parses `bytes` as a JSON object within ``limits``.
    public static func parse(_ bytes: [UInt8]) throws(WebAuthnJSONError) -> JSONNode {
        let node = try JSONNode.parse(bytes, limits: limits)
        guard case .object = node else { throw JSONMembers.wrongType("", "an object", node) }
        return node
    }

    /// The registration a RegistrationResponseJSON describes (its `clientDataJSON` required),
    /// made by the key at `deviceURI`: the client extension results and the authenticator
    /// extension outputs inside the attestation object read back into their types.
    public static func registration(
        reading json: [UInt8], deviceURI: String
    ) throws(WebAuthnJSONError) -> SecurityKeyCredentialRegistration {
        let (root, response) = try members(json)
        var transports: [SecurityKeyTransport] = []
        for (index, item) in (try response.array("transports") ?? []).enumerated() {
            guard case .string(let name) = item else {
                throw JSONMembers.wrongType(response.memberPath("transports") + "[\(index)]", "a string", item)
            }
            transports.append(SecurityKeyTransport(rawValue: name))
        }
        var registration = SecurityKeyCredentialRegistration(
            credentialID: try root.requiredBytes("rawId", sizes: anySize),
            rawAttestationObject: try response.requiredBytes("attestationObject", sizes: anySize),
            rawClientDataJSON: try response.requiredBytes("clientDataJSON", sizes: anySize), transports: transports,
            deviceURI: deviceURI)
        let attestation: AttestationObject
        do { attestation = try AttestationObject(cbor: registration.rawAttestationObject) } catch {
            throw JSONMembers.invalid("response.attestationObject", "does not parse")
        }
        do { registration.authenticatorExtensionOutputs = try attestation.authData.extensionOutputs() } catch {
            throw JSONMembers.invalid("response.attestationObject", "has authenticator extension outputs that do not parse")
        }
        guard let results = try root.object("clientExtensionResults") else { return registration }
        if let prf = try results.object("prf") {
            let (first, second) = try prfResults(prf)
            registration.prf = SecurityKeyPRFRegistrationOutput(
                isSupported: try prf.bool("enabled") ?? false, first: first, second: second)
        }
        registration.hmacCreateSecret = try results.bool("hmacCreateSecret")
        if let properties = try results.object("credProps") {
            registration.credentialProperties = SecurityKeyCredentialProperties(residentKey: try properties.bool("rk"))
        }
        registration.credentialBlobStored = try results.bool("credBlob")
        registration.appIDExclude = try results.bool("appidExclude")
        if let largeBlob = try results.object("largeBlob") {
            registration.largeBlob = SecurityKeyLargeBlobRegistrationOutput(
                isSupported: try largeBlob.bool("supported") ?? false)
        }
        return registration
    }

    /// The assertion an AuthenticationResponseJSON describes (its `clientDataJSON` required),
    /// made by the key at `deviceURI`, the client extension results read back into their types.
    public static func assertion(
        reading json: [UInt8], deviceURI: String
    ) throws(WebAuthnJSONError) -> SecurityKeyCredentialAssertion {
        let (root, response) = try members(json)
        var assertion = SecurityKeyCredentialAssertion(
            credentialID: try root.requiredBytes("rawId", sizes: anySize),
            rawAuthenticatorData: try response.requiredBytes("authenticatorData", sizes: anySize),
            signature: try response.requiredBytes("signature", sizes: anySize),
            userID: try response.bytes("userHandle", sizes: anySize),
            rawClientDataJSON: try response.requiredBytes("clientDataJSON", sizes: anySize), appID: false,
            deviceURI: deviceURI)
        guard let results = try root.object("clientExtensionResults") else { return assertion }
        let appID = try results.bool("appid")
        assertion.appID = appID ?? false
        assertion.appIDRequested = appID != nil
        if let prf = try results.object("prf") {
            let (first, second) = try prfResults(prf)
            if let first { assertion.prf = SecurityKeyPRFAssertionOutput(first: first, second: second) }
        }
        if let output = try results.object("hmacGetSecret") {
            var first = try output.requiredBytes("output1", sizes: 32...32)
            defer { first.wipe() }
            var second = try output.bytes("output2", sizes: 32...32)
            defer { second?.wipe() }
            assertion.hmacGetSecret = SecurityKeyHMACSecretOutput(
                output1: SymmetricKey(data: first), output2: second.map { SymmetricKey(data: $0) })
        }
        assertion.credentialBlob = try results.bytes("getCredBlob", sizes: anySize)
        if let largeBlob = try results.object("largeBlob") {
            assertion.largeBlob = SecurityKeyLargeBlobAssertionOutput(
                readData: try largeBlob.bytes("blob", sizes: anySize), didWrite: try largeBlob.bool("written"))
        }
        return assertion
    }

    static let anySize = 0...(1 << 20)

    /// The document's top-level members and those of its `response`.
    static func members(_ json: [UInt8]) throws(WebAuthnJSONError) -> (root: JSONMembers, response: JSONMembers) {
        let root = try JSONMembers(try parse(json), path: "")
        return (root, try JSONMembers(try root.required("response"), path: "response"))
    }

    /// `prf.results.first` and `.second` (32-byte PRF outputs), when present.
    static func prfResults(_ prf: JSONMembers) throws(WebAuthnJSONError) -> (SymmetricKey?, SymmetricKey?) {
        guard let results = try prf.object("results") else { return (nil, nil) }
        var first = try results.requiredBytes("first", sizes: 32...32)
        defer { first.wipe() }
        var second = try results.bytes("second", sizes: 32...32)
        defer { second?.wipe() }
        return (SymmetricKey(data: first), second.map { SymmetricKey(data: $0) })
    }
}

extension JSONValue {
    /// The same value with every object's members sorted by name (the order
    /// ``SecurityKeyCredentialRegistration/webAuthnJSON`` and securitykeyd's answers keep).
    public func sortedMembers() -> JSONValue {
        switch self {
        case .object(let members): .object(members.map { ($0.0, $0.1.sortedMembers()) }.sorted { $0.0 < $1.0 })
        case .array(let items): .array(items.map { $0.sortedMembers() })
        default: self
        }
    }
}
