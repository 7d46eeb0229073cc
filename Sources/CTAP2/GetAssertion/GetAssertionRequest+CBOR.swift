import CBOR

extension GetAssertionRequest {
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

    /// The parameters as sent: the same map as ``cbor``.
    public var parameters: CBORMap? { cbor }
}
