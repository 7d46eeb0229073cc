import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The JSON error objects: one code style (kebab-case), the CTAP status beside the code, every
/// code in Docs/CLI.md's table under the exit status it comes with; deadlines that hold while
/// a device is opened; an algorithm the key lacks refused before any PIN is asked.
@Suite(.serialized) struct ErrorCodeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Lower-case words of letters and digits joined by single hyphens.
    static func isKebabCase(_ code: String) -> Bool {
        code.range(of: #"^[a-z0-9]+(-[a-z0-9]+)*$"#, options: .regularExpression) != nil
    }

    /// Docs/CLI.md "Error codes": exit status → the codes listed for it.
    static func documentedCodes() throws -> [Int32: Set<String>] {
        let text = try String(contentsOf: root.appendingPathComponent("Docs/CLI.md"), encoding: .utf8)
        guard let start = text.range(of: "### Error codes") else {
            throw CLITestError("no Error codes section")
        }
        var table: [Int32: Set<String>] = [:]
        for line in text[start.upperBound...].split(separator: "\n") {
            if line.hasPrefix("## ") || line.hasPrefix("### ") { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 2, let status = Int32(cells[0]) else { continue }
            let codes = cells[1].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter {
                $0.offset % 2 == 1
            }.map { String($0.element) }
            table[status, default: []].formUnion(codes)
        }
        return table
    }

    /// The error object of a failed `--json` run, checked against the documented table: the
    /// code is kebab-case and listed under the status the run exited with.
    static func expectDocumentedError(
        _ result: CLIRunner.Result, status: Int32, code: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String: Any] {
        #expect(result.status == status, "\(result.stderr)", sourceLocation: sourceLocation)
        let error = try #require(
            try result.object()["error"] as? [String: Any], "\(result.stdout)", sourceLocation: sourceLocation
        )
        let emitted = try #require(error["code"] as? String, sourceLocation: sourceLocation)
        #expect(emitted == code, "\(error)", sourceLocation: sourceLocation)
        #expect(isKebabCase(emitted), "\(emitted)", sourceLocation: sourceLocation)
        let table = try documentedCodes()
        #expect(
            table[result.status]?.contains(emitted) == true,
            "\(emitted) is not documented under exit status \(result.status)", sourceLocation: sourceLocation)
        return error
    }

    @Test func theDocumentedTableCoversEveryStatusInOneStyle() throws {
        let table = try Self.documentedCodes()
        // Every documented exit status that can carry an error object has its row.
        #expect(Set(table.keys).isSuperset(of: [1, 2, 3, 4, 5, 6, 64]))
        for (status, codes) in table {
            for code in codes { #expect(Self.isKebabCase(code), "\(code) under \(status)") }
        }
    }

    /// Every code the tool or a library under it can report is written in the sources as a
    /// literal: the CLI's own (`code: "..."`) and each module's error `Code(rawValue: "...")`.
    @Test func everyCodeInTheSourcesIsKebabCase() throws {
        let sources = Self.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var seen = 0
        var cliCodes: Set<String> = []
        for case let url as URL in files where url.pathExtension == "swift" {
            let text = try String(contentsOf: url, encoding: .utf8)
            let isCLI = url.path.contains("/Sources/securitykey/")
            let pattern = isCLI ? #"code: "([^"]*)""# : #"Code\(rawValue: "([^"]*)"\)"#
            let regex = try NSRegularExpression(pattern: pattern)
            for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let range = Range(match.range(at: 1), in: text) else { continue }
                let code = String(text[range])
                seen += 1
                if isCLI { cliCodes.insert(code) }
                #expect(Self.isKebabCase(code), "\(code) in \(url.lastPathComponent)")
            }
        }
        #expect(seen > 100)
        // The CLI's own codes are all in the documented table.
        let documented = try Self.documentedCodes().values.reduce(into: Set<String>()) { $0.formUnion($1) }
        #expect(
            cliCodes.subtracting(documented).isEmpty,
            "undocumented: \(cliCodes.subtracting(documented).sorted())")
    }

    @Test func failuresWithoutAKeyCarryDocumentedCodes() throws {
        _ = try Self.expectDocumentedError(
            CLIRunner.run(["register", "--rp", "example.org", "--json"]), status: 64, code: "usage")
        _ = try Self.expectDocumentedError(
            CLIRunner.run(["register", "--rp", "com", "--user", "u", "--json"]), status: 64,
            code: "invalid-relying-party")
        _ = try Self.expectDocumentedError(
            CLIRunner.run(["info", "--device", "hidraw0", "--json"]), status: 64, code: "invalid-uri")
        _ = try Self.expectDocumentedError(
            CLIRunner.run(["decode", "--hex", "zz", "--json"]), status: 1, code: "invalid-input")
        _ = try Self.expectDocumentedError(
            // Nothing listens on the port: refused at once.
            CLIRunner.run(["info", "--device", "udp:127.0.0.1:\(CLIRunner.freeUDPPort())?local=0", "--json"]),
            status: 3, code: "no-device")
    }

    /// A UDP socket that never answers: `--timeout 1` ends in about a second (CTAPHID_INIT
    /// waited its own 3 s before), with the timeout's exit status and code.
    @Test func openingASilentKeyHonoursTheTimeout() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        for command in [["info"], ["register", "--rp", "example.org", "--user", "u"]] {
            let started = Date()
            let result = try CLIRunner.run(
                command + ["--device", "udp:127.0.0.1:\(port)?local=0", "--timeout", "1", "--json"])
            let elapsed = Date().timeIntervalSince(started)
            _ = try Self.expectDocumentedError(result, status: 4, code: "timeout")
            // An open that ignored the deadline would wait out CTAPHID_INIT's own 3 s; the margin
            // above 1 s is process start-up on a loaded machine (2.2 s seen with 7 builds running).
            #expect(elapsed >= 0.9 && elapsed < 2.9, "\(command[0]) took \(elapsed) s")
        }
    }

    /// The PIN retries the key reports.
    static func pinRetries(_ device: String) throws -> Int? {
        try CLIRunner.run(["pin", "status", "--device", device, "--json"]).object()["pinRetries"] as? Int
    }

    /// Against a virtual key with a PIN (and no RS256: `--algorithms` offers ES256, EdDSA and ES384): an
    /// RS256-only registration is refused before the PIN is read (a wrong PIN is waiting on
    /// standard input and the key's retries stay as they were); with an algorithm the key has,
    /// the same wrong PIN is read and costs a retry (pin-invalid with its CTAP status); an
    /// excluded credential gives credential-excluded with its CTAP status.
    @Test func keyErrorsCarryTheCTAPStatusBesideAKebabCode() throws {
        let port = CLIRunner.freeUDPPort()
        let device = "udp:127.0.0.1:\(port)?local=0"
        let served = try CLIRunner.withVirtualKey(
            ["--udp", "127.0.0.1:\(port)", "--pin", "1234", "--algorithms", "es256,eddsa,es384"]
        ) {
            CLIRunner.waitUntilServed(device)
            let info = try CLIRunner.run(["info", "--device", device, "--json"]).object()
            let algorithms = (info["algorithms"] as? [[String: Any]])?.compactMap { $0["alg"] as? Int } ?? []
            try #require(!algorithms.isEmpty, "\(info)")
            #expect(algorithms == [-7, -8, -35], "\(info)")
            let before = try #require(try Self.pinRetries(device))

            let base = ["register", "--device", device, "--rp", "example.org", "--user", "u", "--resident"]
            let rs256 = try CLIRunner.run(
                base + ["--alg", "rs256", "--pin-stdin", "--json"], input: "9999\n")
            let refused = try Self.expectDocumentedError(rs256, status: 6, code: "unsupported-algorithm")
            #expect(refused["ctapStatus"] == nil)
            #expect(!rs256.stderr.localizedCaseInsensitiveContains("PIN"), "\(rs256.stderr)")
            #expect(try Self.pinRetries(device) == before)

            let wrong = try CLIRunner.run(base + ["--pin-stdin", "--json"], input: "9999\n")
            let pinError = try Self.expectDocumentedError(wrong, status: 5, code: "pin-invalid")
            let pinStatus = pinError["ctapStatus"] as? [String: Any]
            #expect(pinStatus?["name"] as? String == "CTAP2_ERR_PIN_INVALID")
            #expect(pinStatus?["value"] as? Int == 0x31)
            #expect(try Self.pinRetries(device) == before - 1)

            let made = try CLIRunner.run(base + ["--pin-stdin", "--json"], input: "1234\n")
            try #require(made.status == 0, "\(made.stderr)")
            let id = try #require(try made.object()["id"] as? String)
            let again = try CLIRunner.run(base + ["--exclude", id, "--pin-stdin", "--json"], input: "1234\n")
            let excluded = try Self.expectDocumentedError(again, status: 1, code: "credential-excluded")
            let excludedStatus = excluded["ctapStatus"] as? [String: Any]
            #expect(excludedStatus?["name"] as? String == "CTAP2_ERR_CREDENTIAL_EXCLUDED")
            #expect(excludedStatus?["value"] as? Int == 0x19)
        }
        #expect(served.status == 0)
    }
}
