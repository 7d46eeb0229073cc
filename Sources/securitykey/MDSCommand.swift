import ArgumentParser
import CBOR
import CTAP2
import FoundationEssentials
import WebAuthnVerification
import X509

/// `securitykey mds`: the FIDO Metadata Service (MDS3) BLOB, verified and cached.
struct MDSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mds",
        abstract: "Fetch, verify and query the FIDO Metadata Service (MDS3).",
        discussion: """
            `mds update` verifies a metadata BLOB (its JWS signature, and its signing chain to GlobalSign \
            Root CA - R3 or the --anchor given, at --verify-time or now) and stores it in \
            $XDG_CACHE_HOME/securitykey (~/.cache/securitykey). A BLOB older than the cached one is \
            refused. It also fetches the CRLs the signing chain names and refuses a revoked signer; \
            when they cannot be fetched it warns "revocation not checked" (an error with \
            --require-revocation). `mds update --if-due` does nothing until the cached BLOB's \
            nextUpdate (what the securitykey-mds-update timer runs). `mds show` prints a model's entry \
            from the cache, `mds status` the cache's age and whether it is stale.
            """,
        subcommands: [MDSUpdateCommand.self, MDSShowCommand.self, MDSStatusCommand.self])
}

/// `securitykey mds update`.
struct MDSUpdateCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "update", abstract: "Verify a metadata BLOB and store it in the cache.")

    @Option(
        name: .long, help: ArgumentHelp("Fetch the BLOB from this URL (default: FIDO's).", valueName: "url"))
    var url: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Read the BLOB from this file (`-` for standard input).", valueName: "file"))
    var file: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Check certificates as of this moment (ISO 8601, or YYYY-MM-DD).", valueName: "time"))
    var verifyTime: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Trust these root certificates (PEM) instead of GlobalSign Root CA - R3.", valueName: "file"))
    var anchor: String?

    @Option(
        name: .long,
        help: ArgumentHelp("A CRL (DER or PEM) to check the signing chain against.", valueName: "file"))
    var crl: [String] = []

    @Flag(
        name: .long,
        help: "Refuse the BLOB when a CRL its signing chain names cannot be fetched, verified or is out of date (exit 2)."
    )
    var requireRevocation = false

    @Flag(name: .long, help: "Do nothing while the cached BLOB's nextUpdate has not passed.")
    var ifDue = false

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    var wantsJSON: Bool { json }

    func validate() throws {
        if url != nil, file != nil { throw ValidationError("Give --url or --file, not both.") }
    }

    func execute() async throws {
        let time = try verifyTime.map(MDSCLI.parseTime)
        let anchors = try anchor.map { (path: String) throws -> [Certificate] in
            let bytes = try readInput(path)
            // The one PEM-bundle-or-DER reader; a file it refuses is bad input here (exit 1).
            do throws(WebAuthnVerificationError) {
                return try AttestationTrustAnchors.parse(bytes, source: path)
            } catch {
                throw CLIError.invalidInput(error.message)
            }
        }
        let crls = try crl.map { path in
            let bytes = try readInput(path)
            return try MDSCLI.mapped { () throws(WebAuthnVerificationError) in
                try CertificateRevocationList(bytes: bytes)
            }
        }
        let cache = MDSCLI.cache
        let previous = try MDSCLI.mapped { () throws(WebAuthnVerificationError) in try cache.record() }
        if ifDue, let current = previous.map({ MetadataCacheStatus(record: $0) }), !current.isStale {
            if json {
                Console.json(.object([("due", false), ("metadata", current.json)]))
            } else {
                Console.out(
                    "Metadata BLOB no \(current.no) is current until its nextUpdate (\(current.nextUpdate)); nothing to do.")
            }
            return
        }
        let source = file ?? url ?? MetadataBLOBDownload.defaultURL
        let bytes = if let file { try readInput(file, limit: 64 << 20) } else { try await MDSCLI.download(source) }
        let update = try await MDSCLI.mapped { () async throws(WebAuthnVerificationError) in
            try await cache.update(
                with: bytes, source: source, previous: previous, anchors: anchors, crls: crls, verifyTime: time,
                revocation: RevocationChecker(), requiresRevocation: requireRevocation)
        }
        let blob = update.blob
        if json {
            Console.json(update.json)
        } else {
            Console.out(
                "Metadata BLOB no \(blob.payload.no) (\(blob.payload.entries.count) entries, next update "
                    + "\(blob.payload.nextUpdate)) verifies and is cached in \(cache.directory.path).")
        }
        if blob.isStale {
            Console.err(
                "securitykey: warning: the BLOB's nextUpdate (\(blob.payload.nextUpdate)) has passed; a newer one should exist."
            )
        }
        MDSCLI.warnUnlessRevocationChecked(blob.revocation)
    }
}

/// `securitykey mds status`.
struct MDSStatusCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print which BLOB the cache holds, its age, and whether its nextUpdate has passed.")

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    var wantsJSON: Bool { json }

    func execute() async throws {
        let status = try MDSCLI.cacheStatus(required: true)
        if let status, json {
            Console.json(status.json)
        } else if let status {
            Console.out(status.summary)
        }
    }
}

/// `securitykey mds show`.
struct MDSShowCommand: ReportingCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print a model's metadata from the cache: name, certification, status, roots.")

    @Argument(help: ArgumentHelp("The model's AAGUID.", valueName: "aaguid"))
    var aaguid: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "An attestation certificate key identifier (hex), for U2F models.", valueName: "hex"))
    var key: String?

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    var wantsJSON: Bool { json }

    func validate() throws {
        guard (aaguid == nil) != (key == nil) else {
            throw ValidationError("Give an AAGUID or --key, one of them.")
        }
        if let aaguid, AAGUID(uuidString: aaguid) == nil { throw ValidationError("\(aaguid) is not a UUID.") }
        if let key, key.count != 40 || !key.allSatisfy(\.isHexDigit) {
            throw ValidationError("--key takes 40 hex digits (a SHA-1 key identifier).")
        }
    }

    func execute() async throws {
        let blob = try MDSCLI.loadCache()
        let entry: MetadataBLOBPayloadEntry?
        if let aaguid, let id = AAGUID(uuidString: aaguid) {
            entry = blob.payload.entry(aaguid: id)
        } else if let key {
            entry = blob.payload.entry(attestationCertificateKeyIdentifier: key)
        } else {
            entry = nil
        }
        guard let entry else {
            throw CLIError(
                .failure, code: WebAuthnVerificationError.Code.authenticatorNotInMetadata.rawValue,
                "\(aaguid ?? key ?? "") is not in the cached metadata (BLOB no \(blob.payload.no)).")
        }
        let stale = blob.isStale(at: Date())
        if json {
            Console.json(entry.json(blob: blob, stale: stale))
            return
        }
        for line in entry.summaryLines(blob: blob, stale: stale) { Console.out(line) }
    }
}

/// What the CLI shares about the metadata: the cache, time parsing, error mapping, and the
/// hooks `verify --mds`, `info` and `list` use.
enum MDSCLI {
    /// The cache in `$XDG_CACHE_HOME/securitykey`.
    static var cache: MetadataCache { .default }

    /// The cached BLOB, or a one-sentence error when there is none.
    static func loadCache() throws -> MetadataBLOB {
        guard let blob = try mapped({ () throws(WebAuthnVerificationError) in try cache.load() }) else {
            throw CLIError(
                .failure, code: WebAuthnVerificationError.Code.metadataCacheUnavailable.rawValue,
                "No metadata is cached; run `securitykey mds update` first.")
        }
        return blob
    }

    /// The cache's status (age, nextUpdate, stale), with its warning printed when stale; nil
    /// without a cache, or an error when `required`.
    static func cacheStatus(required: Bool = false) throws -> MetadataCacheStatus? {
        guard let status = try mapped({ () throws(WebAuthnVerificationError) in try cache.status() }) else {
            guard !required else {
                throw CLIError(
                    .failure, code: WebAuthnVerificationError.Code.metadataCacheUnavailable.rawValue,
                    "No metadata is cached; run `securitykey mds update` first.")
            }
            return nil
        }
        if let warning = status.warning { Console.err("securitykey: warning: \(warning)") }
        return status
    }

    /// The "revocation not checked" warning, when CRLs were named but could not be used; with
    /// `subject`, naming what was checked (a fleet's key).
    static func warnUnlessRevocationChecked(_ check: RevocationCheck?, of subject: String? = nil) {
        guard let check, check.status == .notChecked else { return }
        Console.err("securitykey: warning: \(subject.map { "\($0): " } ?? "")\(check.summary).")
    }

    /// The model name the cache gives an AAGUID; nil without a cache or an entry. The hook for
    /// `info` and `list`.
    static func modelName(aaguid: AAGUID) -> String? {
        cachedForNaming?.payload.entry(aaguid: aaguid)?.description
    }

    /// The cache as read once per process for naming models (`list` names many keys).
    private static let cachedForNaming: MetadataBLOB? = try? cache.load()

    /// An RFC 3339 time or a bare `YYYY-MM-DD` (UTC midnight): the one `--verify-time` parser.
    static func parseTime(_ text: String) throws -> Date { try VerifyCommand.moment(text) }

    /// Downloads the BLOB at `url` (64 MiB at most, within a minute).
    static func download(_ url: String) async throws -> [UInt8] {
        do { return try await MetadataBLOBDownload.get(url, limit: 64 << 20, timeout: 60) } catch let error
            as WebAuthnVerificationError
        {
            switch error.code {
            case .metadataURLInvalid: throw CLIError.usage("--url takes an http or https URL.")
            case .metadataHTTPStatus: throw CLIError(.failure, code: "http", error.message)
            case .metadataTooLarge: throw CLIError.invalidInput(error.message)
            default: throw CLIError(.failure, code: "network", error.message)
            }
        }
    }

    /// Runs `body`, turning a metadata error into a CLI error that keeps its code.
    static func mapped<T>(_ body: () async throws(WebAuthnVerificationError) -> T) async throws -> T {
        do { return try await body() } catch { throw cliError(error) }
    }

    /// Runs `body`, turning a metadata error into a CLI error that keeps its code.
    static func mapped<T>(_ body: () throws(WebAuthnVerificationError) -> T) throws -> T {
        do { return try body() } catch { throw cliError(error) }
    }

    static func cliError(_ error: WebAuthnVerificationError) -> CLIError {
        let status: CLIExitStatus
        switch error.code {
        case .metadataMalformed, .metadataCacheUnavailable, .metadataCRLInvalid: status = .failure
        case .unsupportedAlgorithm: status = .notSupported
        default: status = .verificationFailed
        }
        return CLIError(status, code: error.code.rawValue, error.message)
    }

}
