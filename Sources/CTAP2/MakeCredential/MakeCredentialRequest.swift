import CBOR

/// The parameters of authenticatorMakeCredential (CTAP 2.2 §6.1).
public struct MakeCredentialRequest: Hashable, Sendable {
    /// The CBOR keys of the request (CTAP 2.2 §6.1 parameter table).
    public enum Key {
        /// clientDataHash (0x01).
        public static let clientDataHash: CBORValue = 0x01
        /// rp (0x02).
        public static let rp: CBORValue = 0x02
        /// user (0x03).
        public static let user: CBORValue = 0x03
        /// pubKeyCredParams (0x04).
        public static let pubKeyCredParams: CBORValue = 0x04
        /// excludeList (0x05).
        public static let excludeList: CBORValue = 0x05
        /// extensions (0x06).
        public static let extensions: CBORValue = 0x06
        /// options (0x07).
        public static let options: CBORValue = 0x07
        /// pinUvAuthParam (0x08).
        public static let pinUVAuthParam: CBORValue = 0x08
        /// pinUvAuthProtocol (0x09).
        public static let pinUVAuthProtocol: CBORValue = 0x09
        /// enterpriseAttestation (0x0A).
        public static let enterpriseAttestation: CBORValue = 0x0A
        /// attestationFormatsPreference (0x0B).
        public static let attestationFormatsPreference: CBORValue = 0x0B
    }

    /// SHA-256 of the serialized client data (32 bytes).
    public var clientDataHash: [UInt8]
    /// The relying party.
    public var rp: RelyingPartyEntity
    /// The user account.
    public var user: UserEntity
    /// Acceptable credential types and algorithms, preferred first.
    public var pubKeyCredParams: [PublicKeyCredentialParameters]
    /// Credentials that must not be registered again.
    public var excludeList: [PublicKeyCredentialDescriptor]?
    /// Authenticator extension inputs, by extension identifier.
    public var extensions: CBORMap?
    /// rk / up / uv options.
    public var options: CommandOptions?
    /// The PIN/UV auth parameter, where a pinUvAuthToken is used.
    public var pinUVAuthParam: [UInt8]?
    /// The PIN/UV auth protocol version of ``pinUVAuthParam``.
    public var pinUVAuthProtocol: UInt64?
    /// Requests enterprise attestation (1: vendor-facilitated, 2: platform-managed).
    public var enterpriseAttestation: UInt64?
    /// Attestation statement formats the platform prefers, most preferred first.
    public var attestationFormatsPreference: [String]?

    /// Creates a request.
    public init(
        clientDataHash: [UInt8], rp: RelyingPartyEntity, user: UserEntity,
        pubKeyCredParams: [PublicKeyCredentialParameters],
        excludeList: [PublicKeyCredentialDescriptor]? = nil, extensions: CBORMap? = nil,
        options: CommandOptions? = nil, pinUVAuthParam: [UInt8]? = nil, pinUVAuthProtocol: UInt64? = nil,
        enterpriseAttestation: UInt64? = nil, attestationFormatsPreference: [String]? = nil
    ) {
        self.clientDataHash = clientDataHash
        self.rp = rp
        self.user = user
        self.pubKeyCredParams = pubKeyCredParams
        self.excludeList = excludeList
        self.extensions = extensions
        self.options = options
        self.pinUVAuthParam = pinUVAuthParam
        self.pinUVAuthProtocol = pinUVAuthProtocol
        self.enterpriseAttestation = enterpriseAttestation
        self.attestationFormatsPreference = attestationFormatsPreference
    }

    /// The request's parameter map; absent parameters are omitted.
    public var cbor: CBORMap {
        var m = CBORMap()
        m[Key.clientDataHash] = .byteString(clientDataHash)
        m[Key.rp] = rp.cbor
        m[Key.user] = user.cbor
        m[Key.pubKeyCredParams] = .array(pubKeyCredParams.map(\.cbor))
        if let excludeList, !excludeList.isEmpty { m[Key.excludeList] = .array(excludeList.map(\.cbor)) }
        if let extensions, !extensions.isEmpty { m[Key.extensions] = .map(extensions) }
        if let options, !options.isEmpty { m[Key.options] = options.cbor }
        if let pinUVAuthParam { m[Key.pinUVAuthParam] = .byteString(pinUVAuthParam) }
        if let pinUVAuthProtocol { m[Key.pinUVAuthProtocol] = .unsigned(pinUVAuthProtocol) }
        if let enterpriseAttestation { m[Key.enterpriseAttestation] = .unsigned(enterpriseAttestation) }
        if let attestationFormatsPreference {
            m[Key.attestationFormatsPreference] = .array(attestationFormatsPreference.map { .textString($0) })
        }
        return m
    }

    /// The message to send: the command byte followed by the canonical CBOR parameters.
    public func encoded() throws(CTAP2Error) -> [UInt8] {
        guard clientDataHash.count == 32 else {
            throw CTAP2Error(
                .invalidRequest, "The client data hash must be 32 bytes, not \(clientDataHash.count).")
        }
        guard user.id.count <= 64 else {
            throw CTAP2Error(.invalidRequest, "The user ID must be at most 64 bytes, not \(user.id.count).")
        }
        guard !pubKeyCredParams.isEmpty else {
            throw CTAP2Error(.invalidRequest, "At least one credential algorithm must be offered.")
        }
        return [CTAP2Command.makeCredential.rawValue] + CBOREncoder.encode(.map(cbor))
    }
}

/// The authenticatorMakeCredential response (CTAP 2.2 §6.1.2).
public struct MakeCredentialResponse: Hashable, Sendable {
    /// The CBOR keys of the response.
    public enum Key {
        /// fmt (0x01).
        public static let format: CBORValue = 0x01
        /// authData (0x02).
        public static let authData: CBORValue = 0x02
        /// attStmt (0x03).
        public static let attestationStatement: CBORValue = 0x03
        /// epAtt (0x04).
        public static let enterpriseAttestation: CBORValue = 0x04
        /// largeBlobKey (0x05).
        public static let largeBlobKey: CBORValue = 0x05
        /// unsignedExtensionOutputs (0x06).
        public static let unsignedExtensionOutputs: CBORValue = 0x06

        static let known: ClosedRange<UInt64> = 0x01...0x06
    }

    /// The attestation statement format identifier.
    public var format: AttestationFormat
    /// The authenticator data, with the new credential.
    public var authData: AuthenticatorData
    /// The attestation statement, in the format's own shape.
    public var attestationStatement: CBORMap
    /// Whether an enterprise attestation was returned.
    public var enterpriseAttestation: Bool?
    /// The credential's largeBlobKey, when requested.
    public var largeBlobKey: [UInt8]?
    /// Unsigned extension outputs, by extension identifier.
    public var unsignedExtensionOutputs: CBORMap?
    /// Members this library does not know, by key, as sent.
    public var unknownFields: CBORMap

    /// Parses the CBOR body of a makeCredential response (without the status byte).
    public init(cbor bytes: [UInt8]) throws(CTAP2Error) {
        try self.init(map: ResponseDecoding.decodeMap(bytes, what: "makeCredential response"))
    }

    /// Parses a decoded makeCredential response map.
    public init(map: CBORMap) throws(CTAP2Error) {
        let r = FieldReader(map, "makeCredential response")
        guard let fmt = try r.text(Key.format, "fmt") else { throw r.missing("fmt") }
        guard let authData = try r.bytes(Key.authData, "authData") else { throw r.missing("authData") }
        guard let attStmt = try r.subMap(Key.attestationStatement, "attStmt") else {
            throw r.missing("attStmt")
        }
        format = AttestationFormat(rawValue: fmt)
        self.authData = try AuthenticatorData(bytes: authData)
        guard self.authData.attestedCredentialData != nil else {
            throw CTAP2Error.malformed(
                "The makeCredential response's authenticator data has no attested credential.")
        }
        attestationStatement = attStmt
        enterpriseAttestation = try r.bool(Key.enterpriseAttestation, "epAtt")
        largeBlobKey = try r.bytes(Key.largeBlobKey, "largeBlobKey")
        unsignedExtensionOutputs = try r.subMap(Key.unsignedExtensionOutputs, "unsignedExtensionOutputs")
        unknownFields = r.unknownEntries(known: Key.known)
    }

    /// The WebAuthn attestation object for this response.
    public var attestationObject: AttestationObject {
        AttestationObject(format: format, authData: authData, attestationStatement: attestationStatement)
    }
}
