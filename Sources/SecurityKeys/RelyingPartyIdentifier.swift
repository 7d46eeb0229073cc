import FoundationEssentials

/// Checks that a relying party identifier may be used from an origin (WebAuthn L3 §5.1.3
/// step 8 and §5.1.4.1 step 7; HTML "is a registrable domain suffix of or is equal to").
public enum RelyingPartyIdentifier {
    /// Validates `rpID` against `origin` and returns the origin's host.
    ///
    /// The origin must be `https://host[:port]`, or `http://localhost` for development. The RP ID
    /// must be a registrable domain: the host or a parent domain of it on a label boundary, and
    /// never a public suffix (`com`, `co.uk`), even when the host is one. An IP-address host is
    /// refused: its effective domain is not a valid domain (WebAuthn L3 §5.1.3 step 7).
    public static func validate(
        _ rpID: String, origin: String, publicSuffixes: PublicSuffixList
    ) throws(SecurityKeyError) -> String {
        guard let components = URLComponents(string: origin), let scheme = components.scheme?.lowercased(),
            let rawHost = components.host, !rawHost.isEmpty,
            components.path.isEmpty || components.path == "/", components.query == nil,
            components.user == nil, components.password == nil
        else {
            throw SecurityKeyError(
                .invalidOrigin, "The origin \"\(origin)\" is not of the form https://host[:port].")
        }
        // An IPv6 literal's brackets off, as URL hosts carry them.
        let isBracket: (Character) -> Bool = { $0 == "[" || $0 == "]" }
        let lowered = rawHost.lowercased()
        let host = String(lowered.drop(while: isBracket).reversed().drop(while: isBracket).reversed())
        guard let asciiHost = PublicSuffixList.asciiDomain(host) else {
            throw SecurityKeyError(
                .invalidOrigin, "The origin's host \"\(rawHost)\" is not a valid domain name.")
        }
        let isIPAddress =
            asciiHost.contains(":") || asciiHost.split(separator: ".").allSatisfy { Int($0) != nil }
        guard !isIPAddress else {
            throw SecurityKeyError(
                .invalidOrigin,
                "The origin's host \"\(rawHost)\" is an IP address; WebAuthn relying parties are domain names.")
        }
        let isLocalhost = asciiHost == "localhost" || asciiHost.hasSuffix(".localhost")
        guard scheme == "https" || (scheme == "http" && isLocalhost) else {
            throw SecurityKeyError(
                .invalidOrigin,
                "The origin \"\(origin)\" is not secure; WebAuthn needs https (or http://localhost).")
        }
        guard let id = PublicSuffixList.asciiDomain(rpID.lowercased()), !id.isEmpty else {
            throw SecurityKeyError(
                .invalidRelyingParty, "The relying party ID \"\(rpID)\" is not a valid domain name.")
        }
        // localhost (development) is a single label the list's default rule makes public.
        guard (isLocalhost && id == asciiHost) || !publicSuffixes.isPublicSuffix(id) else {
            throw SecurityKeyError(
                .invalidRelyingParty,
                "The relying party ID \"\(rpID)\" is a public suffix, which no site may claim.")
        }
        guard id == asciiHost || asciiHost.hasSuffix("." + id) else {
            throw SecurityKeyError(
                .invalidRelyingParty,
                "The relying party ID \"\(rpID)\" is not the origin's host or a parent domain of it.")
        }
        return asciiHost
    }
}
