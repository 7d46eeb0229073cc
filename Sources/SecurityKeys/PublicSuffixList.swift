import FoundationEssentials

/// The Public Suffix List (publicsuffix.org), used to check that a relying party identifier
/// is a registrable domain suffix of the origin's host (WebAuthn L3 §5.1.3 step 8, HTML's
/// "is a registrable domain suffix of or is equal to").
public struct PublicSuffixList: Sendable {
    private var rules: Set<String> = []
    private var wildcards: Set<String> = []
    private var exceptions: Set<String> = []

    /// Where Debian's `publicsuffix` package installs the list.
    public static let debianPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// Parses the list's text format: one rule per line, `//` comments, `*.` wildcards and
    /// `!` exceptions; Unicode rules are converted to their ASCII (Punycode) form.
    public init(text: String) {
        for rawLine in text.split(whereSeparator: \.isNewline) {
            guard let token = rawLine.split(whereSeparator: \.isWhitespace).first else { continue }
            if token.hasPrefix("//") { continue }
            var rule = String(token)
            var target = \PublicSuffixList.rules
            if rule.hasPrefix("!") {
                rule.removeFirst()
                target = \PublicSuffixList.exceptions
            } else if rule.hasPrefix("*.") {
                rule.removeFirst(2)
                target = \PublicSuffixList.wildcards
            }
            guard let ascii = Self.asciiDomain(rule) else { continue }
            self[keyPath: target].insert(ascii)
        }
    }

    /// Loads the list from a file (by default Debian's copy).
    public init(contentsOf path: String = PublicSuffixList.debianPath) throws(SecurityKeyError) {
        guard let data = FileManager.default.contents(atPath: path),
            let text = String(data: data, encoding: .utf8)
        else {
            throw SecurityKeyError(
                .configuration,
                "The public suffix list could not be read from \(path); install Debian's publicsuffix package."
            )
        }
        self.init(text: text)
    }

    /// The list installed on this machine, loaded once.
    public static let system: PublicSuffixList? = try? PublicSuffixList()

    /// The public suffix of `host` (lower-case ASCII), by the list's algorithm; a host matching
    /// no rule has its last label as public suffix (the implicit `*` rule).
    public func publicSuffix(of host: String) -> String {
        let labels = host.lowercased().split(separator: ".", omittingEmptySubsequences: false).map(
            String.init)
        var longest = labels.last.map { [$0] } ?? []
        for start in labels.indices {
            let candidate = labels[start...].joined(separator: ".")
            let parent = labels[(start + 1)...].joined(separator: ".")
            if exceptions.contains(candidate) {
                // An exception rule's suffix is the candidate without its first label.
                return parent
            }
            let matches =
                rules.contains(candidate) || (start + 1 < labels.count && wildcards.contains(parent))
            if matches && labels.count - start > longest.count {
                longest = Array(labels[start...])
            }
        }
        return longest.joined(separator: ".")
    }

    /// The registrable domain of `host` (lower-case ASCII): its public suffix and the label
    /// before it; nil when `host` is a public suffix itself.
    public func registrableDomain(of host: String) -> String? {
        let host = host.lowercased()
        let suffix = publicSuffix(of: host)
        guard host != suffix, host.hasSuffix("." + suffix) else { return nil }
        let before = host.dropLast(suffix.count + 1)
        guard let label = before.split(separator: ".", omittingEmptySubsequences: false).last, !label.isEmpty
        else { return nil }
        return label + "." + suffix
    }

    /// Whether `host` is itself a public suffix (so no relying party may claim it).
    public func isPublicSuffix(_ host: String) -> Bool {
        publicSuffix(of: host) == host.lowercased()
    }

    /// The ASCII form of a domain, label by label; nil when a label cannot be converted.
    static func asciiDomain(_ domain: String) -> String? {
        var out: [String] = []
        for label in domain.split(separator: ".", omittingEmptySubsequences: false) {
            guard let ascii = Punycode.asciiLabel(String(label)) else { return nil }
            out.append(ascii)
        }
        return out.joined(separator: ".")
    }
}
