import FoundationEssentials

/// Whether a web caller may use a legacy U2F AppID (FIDO AppID and Facet Specification v1.2
/// §3.1.2, which WebAuthn L3 §10.1.1's `appid` extension applies before it uses one).
///
/// A web caller's FacetID is its origin. An AppID is accepted when it is that FacetID, or an
/// https URL whose host is the origin's host (§3.1.2 step 3) or shares its registrable domain
/// (the "eTLD+1" every Trusted Facet List entry must share with the AppID, §3.1.2.3), as
/// browsers decide without fetching the list. Anything else (an http AppID, another site, a
/// public suffix, an insecure origin) is refused with ``SecurityKeyError/Code/securityError``.
public enum FIDOAppID {
    /// Checks that `appID` may be used from `origin`; returns the AppID to hash (the FacetID
    /// when `appID` is empty, §3.1.2 step 2).
    public static func authorize(
        _ appID: String, origin: String, publicSuffixes: PublicSuffixList
    ) throws(SecurityKeyError) -> String {
        if appID.isEmpty || appID == origin { return origin }
        guard let facet = httpsHost(origin, originOnly: true) else {
            throw SecurityKeyError(
                .securityError, "The AppID \"\(appID)\" cannot be used from \"\(origin)\": AppIDs need an https origin.")
        }
        guard let host = httpsHost(appID, originOnly: false) else {
            throw SecurityKeyError(.securityError, "The AppID \"\(appID)\" is not an https URL.")
        }
        if host == facet { return appID }
        guard let site = registrableDomain(facet, publicSuffixes), registrableDomain(host, publicSuffixes) == site
        else {
            throw SecurityKeyError(
                .securityError,
                "The AppID \"\(appID)\" belongs to another site than \"\(origin)\"; an AppID must be on the origin's own registrable domain."
            )
        }
        return appID
    }

    /// The lower-case ASCII host of an https URL (with `originOnly`, of `https://host[:port]`
    /// alone); nil for any other URL.
    static func httpsHost(_ text: String, originOnly: Bool) -> String? {
        guard let components = URLComponents(string: text), components.scheme?.lowercased() == "https",
            let raw = components.host, !raw.isEmpty, components.user == nil, components.password == nil
        else { return nil }
        if originOnly {
            guard components.path.isEmpty || components.path == "/", components.query == nil,
                components.fragment == nil
            else { return nil }
        }
        return PublicSuffixList.asciiDomain(raw.lowercased())
    }

    /// The registrable domain of `host`; nil for a public suffix or an IP address.
    static func registrableDomain(_ host: String, _ publicSuffixes: PublicSuffixList) -> String? {
        let isIPAddress = host.contains(":") || host.split(separator: ".").allSatisfy { Int($0) != nil }
        return isIPAddress ? nil : publicSuffixes.registrableDomain(of: host)
    }
}
