import Testing

@testable import SecurityKeys

/// The FIDO AppID and Facet Specification v1.2 §3.1.2 rules as WebAuthn L3 §10.1.1 applies them
/// to a web origin: the AppID is the FacetID itself, or an https URL on the same host (step 3)
/// or on the same registrable domain ("eTLD+1", §3.1.2.3: a Trusted Facet List entry must
/// share the AppID's). Registrable domains come from Debian's Public Suffix List, so
/// `github.io` (a private-section public suffix) separates its users' sites.
struct FIDOAppIDTests {
    @Test(arguments: [
        // Same host, whatever the path.
        ("https://example.com/appid.json", "https://example.com"),
        // The FacetIDs of one site's hosts and ports share the AppID's registrable domain.
        ("https://www.example.com/appID", "https://register.example.com"),
        ("https://www.example.com/appID", "https://fido.example.com"),
        ("https://www.example.com/appID", "https://www.example.com:444"),
        ("https://example.co.uk/u2f", "https://login.example.co.uk"),
        ("https://Login.Example.COM/u2f", "https://login.example.com"),
        // Step 1: the AppID is the caller's FacetID.
        ("https://a.github.io", "https://a.github.io"),
    ])
    func accepted(_ appID: String, _ origin: String) throws {
        let list = try #require(PublicSuffixList.system, "install Debian's publicsuffix package (make deps)")
        #expect(try FIDOAppID.authorize(appID, origin: origin, publicSuffixes: list) == appID)
    }

    @Test func emptyAppIDIsTheFacetID() throws {
        // Step 2: an empty AppID becomes the caller's FacetID.
        let list = try #require(PublicSuffixList.system)
        #expect(try FIDOAppID.authorize("", origin: "https://example.com", publicSuffixes: list) == "https://example.com")
    }

    @Test(arguments: [
        // Not https.
        ("http://www.example.com/appID", "https://www.example.com"),
        ("ftp://example.com/appID", "https://example.com"),
        ("example.com", "https://example.com"),
        // An insecure caller.
        ("https://www.example.com/appID", "http://www.example.com"),
        // Other sites.
        ("https://example.net/appID", "https://example.com"),
        ("https://evil-example.com/appID", "https://example.com"),
        ("https://example.com.evil.net/appID", "https://example.com"),
        ("https://other.co.uk/u2f", "https://example.co.uk"),
        ("https://b.github.io/appid", "https://a.github.io"),
        // A public suffix is nobody's site.
        ("https://co.uk/u2f", "https://example.co.uk"),
        // Addresses have no registrable domain; only the same host would do.
        ("https://192.0.2.1/appid", "https://192.0.2.2"),
        // Credentials in the URL.
        ("https://user@example.com/appid", "https://www.example.com"),
    ])
    func refused(_ appID: String, _ origin: String) throws {
        let list = try #require(PublicSuffixList.system)
        #expect {
            try FIDOAppID.authorize(appID, origin: origin, publicSuffixes: list)
        } throws: { ($0 as? SecurityKeyError)?.code == .securityError }
    }
}
