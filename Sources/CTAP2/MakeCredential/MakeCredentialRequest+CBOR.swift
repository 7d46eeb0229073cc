import CBOR

extension MakeCredentialRequest {
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

    /// The parameters as sent: the same map as ``cbor``.
    public var parameters: CBORMap? { cbor }
}
