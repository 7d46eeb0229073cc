import CBOR
import FoundationEssentials
import X509

/// What checking a certificate path against the CRLs its certificates name found (RFC 5280
/// §6.3): every named CRL fetched, signed by the certificate's issuer, current and not listing
/// the certificate (`checked`); nothing named (`noneNamed`); or a named CRL that could not be
/// obtained or trusted (`notChecked`, with the reasons). A revoked certificate is not a
/// result: ``RevocationChecker/check(_:at:required:)`` throws for it.
public struct RevocationCheck: Sendable, Hashable {
    /// How far revocation was checked.
    public enum Status: String, Sendable, Hashable {
        /// Every CRL the path names was fetched, verified and is current.
        case checked
        /// No certificate of the path names a CRL over HTTP.
        case noneNamed = "none-named"
        /// A named CRL could not be fetched, or did not verify, or is out of date.
        case notChecked = "not-checked"
    }

    /// How far revocation was checked.
    public var status: Status
    /// The URLs of the CRLs that were used.
    public var crls: [String]
    /// Why revocation is not checked, one line per certificate ("its common name: why"); empty
    /// unless `notChecked`.
    public var problems: [String]

    /// Creates a result from its parts.
    public init(status: Status, crls: [String] = [], problems: [String] = []) {
        self.status = status
        self.crls = crls
        self.problems = problems
    }

    /// `{"status": ..., "crls": [...], "problems": [...]}`: the `revocation` member of
    /// `mds update --json`, `verify --json` and fleet attestation verdicts (Docs/CLI.md).
    public var json: JSONValue {
        .object([
            ("status", .string(status.rawValue)),
            ("crls", .array(crls.map(JSONValue.string))),
            ("problems", .array(problems.map(JSONValue.string))),
        ])
    }

    /// One sentence: "revocation checked against 2 CRLs", "revocation not checked: ...", or
    /// "no CRL named".
    public var summary: String {
        switch status {
        case .checked: "revocation checked against \(crls.count) CRL\(crls.count == 1 ? "" : "s")"
        case .noneNamed: "no certificate names a CRL"
        case .notChecked: "revocation not checked: " + problems.joined(separator: "; ")
        }
    }

    /// Throws ``WebAuthnVerificationError/Code/revocationNotChecked`` when `notChecked`.
    public func require() throws(WebAuthnVerificationError) {
        guard status == .notChecked else { return }
        throw WebAuthnVerificationError(
            .revocationNotChecked,
            "Revocation is required but not checked: \(problems.joined(separator: "; ")).")
    }
}

/// Fetches the CRLs a certificate path's certificates name (cRLDistributionPoints, RFC 5280
/// §4.2.1.13; http and https only, each bounded in size and time) and checks each certificate
/// against its issuer's list (RFC 5280 §6.3.3): the list signed by the issuer, current at the
/// verification time (its nextUpdate not passed, its thisUpdate not in the future), and not
/// naming the certificate's serial number. Used for the metadata BLOB's signing chain
/// (`mds update`) and for attestation paths (`verify --mds`, `fleet --attest`).
public struct RevocationChecker: Sendable {
    /// Fetches the bytes at a URL, at most `limit` bytes within `timeout` seconds.
    public typealias Fetch =
        @Sendable (_ url: String, _ limit: Int, _ timeout: TimeInterval) async throws -> [UInt8]

    /// Seconds each CRL may take to arrive; the CRLs of a path are fetched at once.
    public var timeout: TimeInterval
    /// The largest CRL fetched.
    public var sizeLimit: Int
    /// How CRLs are fetched; libcurl (``MetadataBLOBDownload``) by default.
    public var fetch: Fetch

    /// Creates a checker: 15 s and 16 MiB per CRL, fetched with libcurl unless `fetch` is given.
    public init(
        timeout: TimeInterval = 15, sizeLimit: Int = CertificateRevocationList.maximumSize,
        fetch: Fetch? = nil
    ) {
        self.timeout = timeout
        self.sizeLimit = sizeLimit
        self.fetch =
            fetch ?? { url, limit, timeout in
                try await MetadataBLOBDownload.get(
                    url, limit: limit, timeout: timeout, subject: "the CRL at \(url)")
            }
    }

    /// Checks `path` (leaf first, ending with its trust anchor, as a path builder returns it):
    /// each certificate but the anchor against the CRLs it names, at `time` (now when nil).
    /// Throws ``WebAuthnVerificationError/Code/certificateRevoked`` when a current CRL signed by
    /// the issuer lists a certificate, and, when `required`,
    /// ``WebAuthnVerificationError/Code/revocationNotChecked`` when a named CRL cannot be used.
    public func check(_ path: [Certificate], at time: Date? = nil, required: Bool = false)
        async throws(WebAuthnVerificationError) -> RevocationCheck
    {
        let result = try await evaluate(path, at: time ?? Date())
        if required { try result.require() }
        return result
    }

    private func evaluate(_ path: [Certificate], at time: Date) async throws(WebAuthnVerificationError)
        -> RevocationCheck
    {
        let pairs = Array(zip(path, path.dropFirst()))
        var urls: [String] = []
        for (certificate, _) in pairs {
            for url in certificate.crlDistributionPointURLs where !urls.contains(url) { urls.append(url) }
        }
        guard !urls.isEmpty else { return RevocationCheck(status: .noneNamed) }
        let fetched = await fetchAll(urls)
        var used: [String] = []
        var problems: [String] = []
        for (certificate, issuer) in pairs {
            let named = certificate.crlDistributionPointURLs
            guard !named.isEmpty else { continue }
            var reasons: [String] = []
            var usable: (String, CertificateRevocationList)?
            for url in named {
                switch fetched[url] {
                case .success(let list)?:
                    if let problem = Self.problem(with: list, issuer: issuer, at: time) {
                        reasons.append("the CRL at \(url) \(problem)")
                    } else if usable == nil {
                        usable = (url, list)
                    }
                case .failure(let reason)?: reasons.append(reason.message)
                case nil: reasons.append("the CRL at \(url) was not fetched")
                }
            }
            guard let (url, list) = usable else {
                problems.append("\(certificate.commonNameForMessages): " + reasons.joined(separator: "; "))
                continue
            }
            if list.revokedSerialNumbers.contains(certificate.serialNumber) {
                throw WebAuthnVerificationError(
                    .certificateRevoked,
                    "The certificate \(certificate.nameForMessages) (serial \(certificate.serialNumber)) is revoked by its issuer's CRL at \(url)."
                )
            }
            if !used.contains(url) { used.append(url) }
        }
        return RevocationCheck(
            status: problems.isEmpty ? .checked : .notChecked, crls: used, problems: problems)
    }

    /// Why `list` cannot speak for certificates `issuer` signed at `time`; nil when it can.
    static func problem(with list: CertificateRevocationList, issuer: Certificate, at time: Date) -> String? {
        let formatter = Date.ISO8601FormatStyle()
        guard list.isSigned(by: issuer) else { return "is not signed by \(issuer.nameForMessages)" }
        if let next = list.nextUpdate, next <= time {
            return
                "is out of date (its nextUpdate \(formatter.format(next)) is before \(formatter.format(time)))"
        }
        // A list from the future of both the verification time and the clock is not trusted.
        if list.thisUpdate > max(time, Date()).addingTimeInterval(300) {
            return "is issued in the future (thisUpdate \(formatter.format(list.thisUpdate)))"
        }
        return nil
    }

    /// Every URL fetched at once and parsed: the list, or why there is none.
    private func fetchAll(_ urls: [String]) async -> [String: Result<CertificateRevocationList, FetchProblem>]
    {
        await withTaskGroup(of: (String, Result<CertificateRevocationList, FetchProblem>).self) { group in
            for url in urls {
                group.addTask { [fetch, sizeLimit, timeout] in
                    let bytes: [UInt8]
                    do {
                        bytes = try await fetch(url, sizeLimit, timeout)
                    } catch let error as WebAuthnVerificationError {
                        return (url, .failure(FetchProblem(error.message)))
                    } catch {
                        return (
                            url, .failure(FetchProblem("the CRL at \(url) could not be fetched (\(error))"))
                        )
                    }
                    do throws(WebAuthnVerificationError) {
                        return (url, .success(try CertificateRevocationList(bytes: bytes)))
                    } catch {
                        return (
                            url, .failure(FetchProblem("the CRL at \(url) is not a CRL (\(error.message))"))
                        )
                    }
                }
            }
            var results: [String: Result<CertificateRevocationList, FetchProblem>] = [:]
            for await (url, result) in group { results[url] = result }
            return results
        }
    }

    /// Why a CRL could not be obtained, in words.
    struct FetchProblem: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }
}

extension Certificate {
    /// The subject's common name when it has one (what revocation problems name a certificate
    /// by), else ``nameForMessages``.
    var commonNameForMessages: String {
        for rdn in subject {
            for attribute in rdn where attribute.type == .RDNAttributeType.commonName {
                return "\(attribute.value)"
            }
        }
        return nameForMessages
    }
}

extension WebAuthnVerificationError.Code {
    /// A certificate of a path is listed on its issuer's CRL (RFC 5280 §6.3).
    public static let certificateRevoked = Self(rawValue: "certificate-revoked")
    /// Revocation was required but a CRL a certificate names could not be fetched, did not
    /// verify, or is out of date.
    public static let revocationNotChecked = Self(rawValue: "revocation-not-checked")
}
