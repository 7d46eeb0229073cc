import CBOR

extension GetAssertionResponse: CTAP2Response {
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
}
