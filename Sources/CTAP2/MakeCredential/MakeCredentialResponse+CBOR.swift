import CBOR

extension MakeCredentialResponse: CTAP2Response {
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
}
