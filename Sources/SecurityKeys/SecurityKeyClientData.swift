import Crypto

/// Where the client data of a request comes from: the library builds it from an origin, or
/// the caller (a browser, a daemon) passes the JSON it built or only its hash.
public enum SecurityKeyClientData: Hashable, Sendable {
    /// Build `clientDataJSON` (WebAuthn L3 §5.8.1) for this origin; the relying party ID is
    /// checked against the origin's host and the public suffix list.
    case origin(String, crossOrigin: Bool = false, topOrigin: String? = nil)
    /// Use this serialized client data as is; the caller has checked the origin.
    case json([UInt8])
    /// Use only this SHA-256 client data hash; results then carry no `rawClientDataJSON`.
    case hash([UInt8])

    /// The serialized client data (when known) and its hash, for `ceremony` and `challenge`.
    func resolve(
        ceremony: CollectedClientData.Ceremony, challenge: [UInt8], relyingPartyIdentifier: String,
        publicSuffixes: PublicSuffixList?
    ) throws(SecurityKeyError) -> (json: [UInt8]?, hash: [UInt8]) {
        switch self {
        case .origin(let origin, let crossOrigin, let topOrigin):
            guard let publicSuffixes else {
                throw SecurityKeyError(
                    .configuration,
                    "The public suffix list could not be read from \(PublicSuffixList.debianPath); install Debian's publicsuffix package."
                )
            }
            _ = try RelyingPartyIdentifier.validate(
                relyingPartyIdentifier, origin: origin, publicSuffixes: publicSuffixes)
            guard !challenge.isEmpty else {
                throw SecurityKeyError(
                    .invalidRequest, "The challenge is empty; the relying party must send one.")
            }
            let data = CollectedClientData(
                type: ceremony, challenge: challenge, origin: origin, crossOrigin: crossOrigin,
                topOrigin: crossOrigin ? topOrigin : nil)
            return (data.json, data.hash)
        case .json(let json):
            guard !json.isEmpty else {
                throw SecurityKeyError(.invalidRequest, "The client data JSON passed in is empty.")
            }
            return (json, Array(SHA256.hash(data: json)))
        case .hash(let hash):
            guard hash.count == 32 else {
                throw SecurityKeyError(
                    .invalidRequest, "A client data hash is 32 bytes (SHA-256), not \(hash.count).")
            }
            return (nil, hash)
        }
    }
}
