import CBOR

/// The parameters of authenticatorGetAssertion (CTAP 2.2 §6.2).
public struct GetAssertionRequest: Hashable, Sendable {
    /// The CBOR keys of the request (CTAP 2.2 §6.2 parameter table).
    public enum Key {
        /// rpId (0x01).
        public static let rpID: CBORValue = 0x01
        /// clientDataHash (0x02).
        public static let clientDataHash: CBORValue = 0x02
        /// allowList (0x03).
        public static let allowList: CBORValue = 0x03
        /// extensions (0x04).
        public static let extensions: CBORValue = 0x04
        /// options (0x05).
        public static let options: CBORValue = 0x05
        /// pinUvAuthParam (0x06).
        public static let pinUVAuthParam: CBORValue = 0x06
        /// pinUvAuthProtocol (0x07).
        public static let pinUVAuthProtocol: CBORValue = 0x07
    }

    /// The relying party ID.
    public var rpID: String
    /// SHA-256 of the serialized client data (32 bytes).
    public var clientDataHash: [UInt8]
    /// Credentials acceptable to the relying party; empty or nil asks for discoverable ones.
    public var allowList: [PublicKeyCredentialDescriptor]?
    /// Authenticator extension inputs, by extension identifier.
    public var extensions: CBORMap?
    /// up / uv options (rk is not valid here).
    public var options: CommandOptions?
    /// The PIN/UV auth parameter, where a pinUvAuthToken is used.
    public var pinUVAuthParam: [UInt8]?
    /// The PIN/UV auth protocol version of ``pinUVAuthParam``.
    public var pinUVAuthProtocol: UInt64?

    /// Creates a request.
    public init(
        rpID: String, clientDataHash: [UInt8], allowList: [PublicKeyCredentialDescriptor]? = nil,
        extensions: CBORMap? = nil, options: CommandOptions? = nil, pinUVAuthParam: [UInt8]? = nil,
        pinUVAuthProtocol: UInt64? = nil
    ) {
        self.rpID = rpID
        self.clientDataHash = clientDataHash
        self.allowList = allowList
        self.extensions = extensions
        self.options = options
        self.pinUVAuthParam = pinUVAuthParam
        self.pinUVAuthProtocol = pinUVAuthProtocol
    }

    /// The request's parameter map; absent parameters are omitted.
    public var cbor: CBORMap {
        var m = CBORMap()
        m[Key.rpID] = .textString(rpID)
        m[Key.clientDataHash] = .byteString(clientDataHash)
        if let allowList, !allowList.isEmpty { m[Key.allowList] = .array(allowList.map(\.cbor)) }
        if let extensions, !extensions.isEmpty { m[Key.extensions] = .map(extensions) }
        if let options, !options.isEmpty { m[Key.options] = options.cbor }
        if let pinUVAuthParam { m[Key.pinUVAuthParam] = .byteString(pinUVAuthParam) }
        if let pinUVAuthProtocol { m[Key.pinUVAuthProtocol] = .unsigned(pinUVAuthProtocol) }
        return m
    }

    /// The message to send: the command byte followed by the canonical CBOR parameters.
    public func encoded() throws(CTAP2Error) -> [UInt8] {
        guard clientDataHash.count == 32 else {
            throw CTAP2Error(
                .invalidRequest, "The client data hash must be 32 bytes, not \(clientDataHash.count).")
        }
        guard options?.residentKey == nil else {
            throw CTAP2Error(.invalidRequest, "The rk option is not valid for getAssertion.")
        }
        return [CTAP2Command.getAssertion.rawValue] + CBOREncoder.encode(.map(cbor))
    }
}

/// The authenticatorGetAssertion and authenticatorGetNextAssertion response (CTAP 2.2 §6.2.2).
public struct GetAssertionResponse: Hashable, Sendable {
    /// The CBOR keys of the response.
    public enum Key {
        /// credential (0x01).
        public static let credential: CBORValue = 0x01
        /// authData (0x02).
        public static let authData: CBORValue = 0x02
        /// signature (0x03).
        public static let signature: CBORValue = 0x03
        /// user (0x04).
        public static let user: CBORValue = 0x04
        /// numberOfCredentials (0x05).
        public static let numberOfCredentials: CBORValue = 0x05
        /// userSelected (0x06).
        public static let userSelected: CBORValue = 0x06
        /// largeBlobKey (0x07).
        public static let largeBlobKey: CBORValue = 0x07
        /// unsignedExtensionOutputs (0x08).
        public static let unsignedExtensionOutputs: CBORValue = 0x08

        static let known: ClosedRange<UInt64> = 0x01...0x08
    }

    /// The credential used; may be absent when the allow list named exactly one.
    public var credential: PublicKeyCredentialDescriptor?
    /// The authenticator data that was signed.
    public var authData: AuthenticatorData
    /// The assertion signature over authData ‖ clientDataHash.
    public var signature: [UInt8]
    /// The user of a discoverable credential.
    public var user: UserEntity?
    /// How many credentials matched (first response only).
    public var numberOfCredentials: UInt64?
    /// Whether the user picked this credential on the authenticator.
    public var userSelected: Bool?
    /// The credential's largeBlobKey, when requested.
    public var largeBlobKey: [UInt8]?
    /// Unsigned extension outputs, by extension identifier.
    public var unsignedExtensionOutputs: CBORMap?
    /// Members this library does not know, by key, as sent.
    public var unknownFields: CBORMap

    /// Parses the CBOR body of a getAssertion response (without the status byte).
    public init(cbor bytes: [UInt8]) throws(CTAP2Error) {
        try self.init(map: ResponseDecoding.decodeMap(bytes, what: "getAssertion response"))
    }

    /// Parses a decoded getAssertion response map.
    public init(map: CBORMap) throws(CTAP2Error) {
        let context = "getAssertion response"
        let r = FieldReader(map, context)
        credential = try r.value(Key.credential).map { (v) throws(CTAP2Error) in
            try PublicKeyCredentialDescriptor(cbor: v, context: context)
        }
        guard let authData = try r.bytes(Key.authData, "authData") else { throw r.missing("authData") }
        self.authData = try AuthenticatorData(bytes: authData)
        guard let signature = try r.bytes(Key.signature, "signature") else { throw r.missing("signature") }
        self.signature = signature
        user = try r.value(Key.user).map { (v) throws(CTAP2Error) in try UserEntity(cbor: v, context: context)
        }
        numberOfCredentials = try r.uint(Key.numberOfCredentials, "numberOfCredentials")
        userSelected = try r.bool(Key.userSelected, "userSelected")
        largeBlobKey = try r.bytes(Key.largeBlobKey, "largeBlobKey")
        unsignedExtensionOutputs = try r.subMap(Key.unsignedExtensionOutputs, "unsignedExtensionOutputs")
        unknownFields = r.unknownEntries(known: Key.known)
    }

    /// Checks the assertion signature over authData ‖ clientDataHash with the credential's
    /// public key (WebAuthn §7.2 step 20); throws ``CTAP2Error/Code/verificationFailed``.
    public func verify(clientDataHash: [UInt8], publicKey: COSEKey) throws(CTAP2Error) {
        try publicKey.verifySignature(signature, for: authData.bytes + clientDataHash)
    }
}
