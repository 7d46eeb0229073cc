/// A response APDU (ISO/IEC 7816-4 §5.1): response data followed by SW1-SW2.
public struct ResponseAPDU: Hashable, Sendable, CustomStringConvertible {
    /// Response data.
    public var data: [UInt8]
    /// The status word.
    public var status: StatusWord

    /// Creates a response.
    public init(data: [UInt8] = [], status: StatusWord) {
        self.data = data
        self.status = status
    }

    /// Parses a response; anything shorter than the two status bytes is malformed.
    public init(bytes: [UInt8]) throws(ISO7816Error) {
        guard bytes.count >= 2 else {
            throw ISO7816Error(
                .truncatedResponse,
                "The card's response has \(bytes.count) bytes, fewer than the 2 status bytes.")
        }
        data = Array(bytes[..<(bytes.count - 2)])
        status = StatusWord(sw1: bytes[bytes.count - 2], sw2: bytes[bytes.count - 1])
    }

    /// The response as it travels: data then SW1-SW2.
    public var bytes: [UInt8] { data + status.bytes }

    public var description: String { "\(data.count) bytes, SW \(status)" }
}

/// The FIDO applet (CTAP 2.1 §11.3.1).
public enum FIDOApplet {
    /// The FIDO application identifier A0000006472F0001.
    public static let aid: [UInt8] = [0xA0, 0x00, 0x00, 0x06, 0x47, 0x2F, 0x00, 0x01]
    /// The SELECT answer of an authenticator that implements U2F (and may also speak CTAP2).
    public static let u2fVersion: [UInt8] = Array("U2F_V2".utf8)
    /// The SELECT answer of a CTAP2-only authenticator.
    public static let fido2Version: [UInt8] = Array("FIDO_2_0".utf8)
    /// The CLA of NFCCTAP_MSG and NFCCTAP_GETRESPONSE (proprietary class).
    public static let ctapClass: UInt8 = 0x80
    /// NFCCTAP_MSG P1 bit telling the card the client polls with NFCCTAP_GETRESPONSE.
    public static let getResponseSupported: UInt8 = 0x80
    /// NFCCTAP_GETRESPONSE P1 asking the card to cancel the pending message (as python-fido2 does).
    public static let cancel: UInt8 = 0x11
}
