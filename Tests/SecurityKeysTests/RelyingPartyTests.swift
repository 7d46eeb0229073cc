import Testing

@testable import SecurityKeys

/// Cases from the Public Suffix List's own test file (publicsuffix.org `tests/test_psl.txt`),
/// run against Debian's copy of the list: host → registrable domain (nil: none).
struct PublicSuffixTests {
    static let list: PublicSuffixList? = PublicSuffixList.system

    @Test func debianListLoads() throws {
        let list = try #require(Self.list, "install Debian's publicsuffix package (make deps)")
        #expect(list.isPublicSuffix("com"))
        #expect(!list.isPublicSuffix("example.com"))
    }

    @Test(
        arguments: [
            ("com", nil), ("example.com", "example.com"), ("b.example.com", "example.com"),
            ("a.b.example.com", "example.com"), ("uk.com", nil), ("example.uk.com", "example.uk.com"),
            ("b.example.uk.com", "example.uk.com"), ("test.ac", "test.ac"), ("mm", nil), ("c.mm", nil),
            ("b.c.mm", "b.c.mm"), ("a.b.c.mm", "b.c.mm"), ("jp", nil), ("test.jp", "test.jp"),
            ("www.test.jp", "test.jp"), ("ac.jp", nil), ("test.ac.jp", "test.ac.jp"), ("kyoto.jp", nil),
            ("test.kyoto.jp", "test.kyoto.jp"), ("ide.kyoto.jp", nil), ("b.ide.kyoto.jp", "b.ide.kyoto.jp"),
            ("c.kobe.jp", nil), ("b.c.kobe.jp", "b.c.kobe.jp"), ("city.kobe.jp", "city.kobe.jp"),
            ("www.city.kobe.jp", "city.kobe.jp"), ("ck", nil), ("test.ck", nil), ("b.test.ck", "b.test.ck"),
            ("www.ck", "www.ck"), ("www.www.ck", "www.ck"), ("us", nil), ("test.us", "test.us"),
            ("ak.us", nil), ("test.ak.us", "test.ak.us"), ("k12.ak.us", nil),
            ("test.k12.ak.us", "test.k12.ak.us"),
            ("xn--85x722f.com.cn", "xn--85x722f.com.cn"), ("xn--55qx5d.cn", nil),
            ("xn--85x722f.xn--55qx5d.cn", "xn--85x722f.xn--55qx5d.cn"),
            ("shishi.xn--fiqs8s", "shishi.xn--fiqs8s"),
            ("xn--fiqs8s", nil),
        ] as [(String, String?)])
    func registrableDomain(_ host: String, _ expected: String?) throws {
        let list = try #require(Self.list)
        #expect(list.registrableDomain(of: host) == expected)
    }
}

/// WebAuthn's rule: the RP ID is the origin's host or a registrable parent of it.
struct RelyingPartyIdentifierTests {
    @Test(arguments: [
        ("example.com", "https://example.com"), ("example.com", "https://login.example.com"),
        ("example.com", "https://login.example.com:8443"), ("login.example.com", "https://login.example.com"),
        ("localhost", "http://localhost:8080"), ("example.co.uk", "https://www.example.co.uk"),
    ])
    func accepted(_ rpID: String, _ origin: String) throws {
        let list = try #require(PublicSuffixList.system)
        #expect(throws: Never.self) {
            try RelyingPartyIdentifier.validate(rpID, origin: origin, publicSuffixes: list)
        }
    }

    @Test(arguments: [
        ("com", "https://example.com", SecurityKeyError.Code.invalidRelyingParty),
        ("co.uk", "https://www.example.co.uk", .invalidRelyingParty),
        ("ample.com", "https://example.com", .invalidRelyingParty),
        ("evil.com", "https://example.com", .invalidRelyingParty),
        ("sub.example.com", "https://example.com", .invalidRelyingParty),
        // An IP address is not a valid domain (URL standard), so no RP can live there.
        ("0.1", "https://127.0.0.1", .invalidOrigin),
        ("127.0.0.1", "https://127.0.0.1", .invalidOrigin),
        ("::1", "https://[::1]", .invalidOrigin),
        // A public suffix is never an RP ID, even when it is the whole host (PSL: com, co.uk).
        ("com", "https://com", .invalidRelyingParty),
        ("co.uk", "https://co.uk", .invalidRelyingParty),
        ("example.com", "http://example.com", .invalidOrigin),
        ("example.com", "https://example.com/path", .invalidOrigin),
        ("example.com", "example.com", .invalidOrigin),
        ("github.io", "https://someone.github.io", .invalidRelyingParty),
    ])
    func rejected(_ rpID: String, _ origin: String, _ code: SecurityKeyError.Code) throws {
        let list = try #require(PublicSuffixList.system)
        let error = #expect(throws: SecurityKeyError.self) {
            try RelyingPartyIdentifier.validate(rpID, origin: origin, publicSuffixes: list)
        }
        #expect(error?.code == code)
    }

    @Test func punycodeMatchesRFC3492() {
        // RFC 3492 §7.1 sample (A) Arabic (Egyptian), and the PSL's 公司.cn → xn--55qx5d.cn.
        #expect(
            Punycode.asciiLabel(
                "\u{0644}\u{064A}\u{0647}\u{0645}\u{0627}\u{0628}\u{062A}\u{0643}\u{0644}\u{0645}\u{0648}\u{0634}\u{0639}\u{0631}\u{0628}\u{064A}\u{061F}"
            )
                == "xn--egbpdaj6bu4bxfgehfvwxn")
        #expect(PublicSuffixList.asciiDomain("公司.cn") == "xn--55qx5d.cn")
        #expect(PublicSuffixList.asciiDomain("食狮.中国") == "xn--85x722f.xn--fiqs8s")
    }
}
