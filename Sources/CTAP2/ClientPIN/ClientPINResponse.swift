import CBOR

/// The authenticatorClientPIN response (CTAP 2.1 §6.5.5, response table).
public struct ClientPINResponse: CTAP2Response, Hashable {
    /// The CBOR keys of the response.
    public enum Key {
        /// keyAgreement (0x01): the authenticator's COSE key.
        public static let keyAgreement: CBORValue = 0x01
        /// pinUvAuthToken (0x02): the encrypted token.
        public static let pinUVAuthToken: CBORValue = 0x02
        /// pinRetries (0x03).
        public static let pinRetries: CBORValue = 0x03
        /// powerCycleState (0x04).
        public static let powerCycleState: CBORValue = 0x04
        /// uvRetries (0x05).
        public static let uvRetries: CBORValue = 0x05
    }

    /// The authenticator's key-agreement key.
    public var keyAgreement: COSEKey?
    /// The encrypted pinUvAuthToken.
    public var pinUVAuthTokenEnc: [UInt8]?
    /// PIN attempts left before the PIN is blocked.
    public var pinRetries: UInt64?
    /// Whether the key must be power-cycled before the next PIN attempt.
    public var powerCycleState: Bool?
    /// Built-in UV attempts left.
    public var uvRetries: UInt64?

    /// Parses the CBOR body of a clientPIN response (without the status byte); an empty body
    /// (setPIN, changePIN) gives an empty response.
    public init(cbor bytes: [UInt8]) throws(CTAP2Error) {
        if bytes.isEmpty {
            self.init()
            return
        }
        try self.init(map: ResponseDecoding.decodeMap(bytes, what: "clientPIN response"))
    }

    /// Parses a decoded clientPIN response map.
    public init(map: CBORMap) throws(CTAP2Error) {
        let r = FieldReader(map, "clientPIN response")
        keyAgreement = try r.subMap(Key.keyAgreement, "keyAgreement").map { (m) throws(CTAP2Error) in
            try COSEKey(map: m)
        }
        pinUVAuthTokenEnc = try r.bytes(Key.pinUVAuthToken, "pinUvAuthToken")
        pinRetries = try r.uint(Key.pinRetries, "pinRetries")
        powerCycleState = try r.bool(Key.powerCycleState, "powerCycleState")
        uvRetries = try r.uint(Key.uvRetries, "uvRetries")
    }

    private init() {}
}
