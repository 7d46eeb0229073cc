import _SecurityKeyInternals
import Crypto
import FoundationEssentials

/// The client data a WebAuthn client collects and the authenticator signs the hash of
/// (WebAuthn L3 §5.8.1 `CollectedClientData`).
public struct CollectedClientData: Sendable, Hashable {
    /// `webauthn.create` or `webauthn.get`.
    public struct Ceremony: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Registration.
        public static let create = Ceremony(rawValue: "webauthn.create")
        /// Authentication.
        public static let get = Ceremony(rawValue: "webauthn.get")
    }

    /// The ceremony.
    public var type: Ceremony
    /// The relying party's challenge.
    public var challenge: [UInt8]
    /// The origin the request is made for, e.g. `https://example.org`.
    public var origin: String
    /// Whether the request comes from a frame of another origin.
    public var crossOrigin: Bool
    /// The top-level origin, when `crossOrigin`.
    public var topOrigin: String?

    /// Creates client data.
    public init(
        type: Ceremony, challenge: [UInt8], origin: String, crossOrigin: Bool = false,
        topOrigin: String? = nil
    ) {
        self.type = type
        self.challenge = challenge
        self.origin = origin
        self.crossOrigin = crossOrigin
        self.topOrigin = topOrigin
    }

    /// The JSON serialization of WebAuthn L3 §5.8.1.1 ("limited verification" order: type,
    /// challenge, origin, crossOrigin, then topOrigin), byte for byte what browsers send.
    public var json: [UInt8] {
        var out = "{\"type\":" + Self.ccdToString(type.rawValue)
        out += ",\"challenge\":" + Self.ccdToString(Base64URL.encode(challenge))
        out += ",\"origin\":" + Self.ccdToString(origin)
        out += ",\"crossOrigin\":" + (crossOrigin ? "true" : "false")
        if let topOrigin { out += ",\"topOrigin\":" + Self.ccdToString(topOrigin) }
        out += "}"
        return Array(out.utf8)
    }

    /// SHA-256 of ``json``: the `clientDataHash` sent to the authenticator.
    public var hash: [UInt8] { Array(SHA256.hash(data: json)) }

    /// CCDToString (WebAuthn L3 §5.8.1.2): JSON string escaping as the spec defines it.
    static func ccdToString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0..<0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
