import Foundation
import TestProcesses
import Testing

/// A virtual key attesting under a test PKI made with openssl, and the metadata that vouches
/// for it: the attestation root (the model's `attestationRootCertificates`, no CRL named) →
/// an intermediate CA (naming the root's CRL) → the attestation certificate (naming the CA's
/// CRL, or `leafCRL`), the key's packed statement carrying the leaf and the CA in `x5c`. The
/// BLOB listing the model is signed under ``SignedBLOBBed``'s chain and stored in a cache of
/// its own; the loopback server serves the BLOB and every CRL. Its methods wait on child
/// processes: tests call them through `TestProcess.onThread`, one at a time.
private final class AttestedKeyBed: @unchecked Sendable {
    static let aaguid = "7e57ab1e-0000-4c00-8000-00000000a7e5"
    let blob: SignedBLOBBed
    let keys: VirtualKeyBed
    let cache: URL
    let environment: [String: String]
    private(set) var uri = ""

    /// The PKI, with the CA's CRL at `leafCRL` instead of on the server when given.
    init(leafCRL: String? = nil) throws {
        blob = try SignedBLOBBed()
        keys = try VirtualKeyBed(prefix: "attestation-revocation")
        (cache, environment) = temporaryCache()
        let pki = blob.pki
        try pki.certificate(
            "att-root", subject: "/C=US/O=Test Vendor/CN=Test Attestation Root", issuer: nil, isCA: true,
            serial: "4000")
        try pki.certificate(
            "att-ca", subject: "/C=US/O=Test Vendor/CN=Test Attestation CA", issuer: "att-root", isCA: true,
            crlURLs: [blob.server.url("att-root.crl")], serial: "5000")
        try pki.certificate(
            "att-leaf", subject: "/C=US/O=Test Vendor/OU=Authenticator Attestation/CN=Test Attestation Key",
            issuer: "att-ca", isCA: false, crlURLs: [leafCRL ?? blob.server.url("att-ca.crl")], serial: "6000"
        )
        try pki.crl(of: "att-root")
        try pki.crl(of: "att-ca")
    }

    deinit { try? FileManager.default.removeItem(at: cache) }

    /// Caches a BLOB (numbered `no`, with `nextUpdate`) that lists the model with the
    /// attestation root, as `mds update` fetches it.
    func cacheMetadata(no: Int = 500, nextUpdate: String = day(30)) throws {
        let root = Data(try blob.pki.bytes("att-root.der")).base64EncodedString()
        let entry: [String: Any] = [
            "aaguid": Self.aaguid,
            "metadataStatement": [
                "description": "Test Revocation Key", "aaguid": Self.aaguid,
                "attestationRootCertificates": [root],
            ],
            "statusReports": [["status": "FIDO_CERTIFIED_L1", "effectiveDate": "2024-01-01"]],
            "timeOfLastStatusChange": "2024-01-01",
        ]
        try blob.writeBLOB("blob-\(no).jwt", no: no, nextUpdate: nextUpdate, entries: [entry])
        let update = try blob.update("blob-\(no).jwt", environment: environment)
        guard update.status == 0 else { throw BedError("mds update failed: \(update.stderr)") }
    }

    /// Serves the virtual key attesting with the leaf's key, the leaf and the CA in `x5c`.
    func serve() throws {
        let chain = keys.work.appendingPathComponent("chain.pem")
        try Data(try blob.pki.bytes("att-leaf.pem") + blob.pki.bytes("att-ca.pem")).write(to: chain)
        uri = try keys.serveUDP(
            name: "key",
            extra: [
                "--aaguid", Self.aaguid, "--attestation-key", blob.pki.path("att-leaf.key"),
                "--attestation-certificate", chain.path,
            ])
    }

    /// A registration made on the key (`register --json`), written to a file; its path.
    func register() throws -> String {
        let made = try CLIRunner.run([
            "register", "--device", uri, "--rp", "example.org", "--user", "u", "--json",
        ])
        guard made.status == 0 else { throw BedError("register failed: \(made.stderr)") }
        let file = keys.work.appendingPathComponent("registration-\(UUID()).json")
        try Data(made.stdout.utf8).write(to: file)
        return file.path
    }

    /// `verify --registration FILE --rp example.org --mds --json` with `extra`, over the cache.
    func verify(_ registration: String, _ extra: [String] = []) throws -> CLIRunner.Result {
        try CLIRunner.run(
            ["verify", "--registration", registration, "--rp", "example.org", "--mds", "--json"] + extra,
            environment: environment)
    }

    /// `fleet --device URI` with `extra` (`--json` unless another output is asked for), over the
    /// cache.
    func fleet(_ extra: [String]) throws -> CLIRunner.Result {
        let output = extra.contains { ["--csv", "--openmetrics"].contains($0) } ? [] : ["--json"]
        return try CLIRunner.run(["fleet", "--device", uri] + output + extra, environment: environment)
    }

    /// A policy file every healthy key passes (a key not proven genuine fails any policy).
    func policy() throws -> String {
        let file = keys.work.appendingPathComponent("policy.json")
        try Data(#"{"healthRequired": true}"#.utf8).write(to: file)
        return file.path
    }
}

/// The one row of a `fleet --json` run.
private func row(_ run: CLIRunner.Result) throws -> [String: Any] {
    guard let rows = try? run.json() as? [[String: Any]], let row = rows.first else {
        throw CLITestError("fleet printed no row: \(run.stdout) \(run.stderr)")
    }
    return row
}

/// `verify --mds` and `fleet --attest` against attestation chains whose certificates name CRLs,
/// through the built binary: the CRLs fetched over HTTP, a revoked certificate refused with its
/// code, an unreachable CRL said ("revocation not checked") and made an error on request.
@Suite("verify --mds and fleet --attest: the attestation chain's CRLs", .serialized)
struct AttestationRevocationTests {
    /// Every CRL checked; then `revoked` (the leaf, by the CA; or the CA, by the root) listed.
    @Test(arguments: ["att-leaf", "att-ca"])
    func checkedThenARevokedCertificateIsRefused(revoked: String) async throws {
        let bed = try await TestProcess.onThread { try AttestedKeyBed() }
        let registration = try await TestProcess.onThread { () throws -> String in
            try bed.cacheMetadata()
            try bed.serve()
            return try bed.register()
        }
        let policy = try bed.policy()

        let good = try await TestProcess.onThread { try bed.verify(registration, ["--require-revocation"]) }
        #expect(good.status == 0, "\(good.stderr)")
        let verified = try good.object()["registration"] as? [String: Any]
        #expect(verified?["model"] as? String == "Test Revocation Key")
        let revocation = verified?["revocation"] as? [String: Any]
        #expect(revocation?["status"] as? String == "checked", "\(good.stdout)")
        // The leaf names the CA's CRL, the CA the root's; the root (the anchor) is not checked.
        #expect(
            revocation?["crls"] as? [String] == [
                bed.blob.server.url("att-ca.crl"), bed.blob.server.url("att-root.crl"),
            ])
        #expect(!good.stderr.contains("revocation not checked"))

        let fleet = try await TestProcess.onThread { try bed.fleet(["--attest", "--policy", policy]) }
        #expect(fleet.status == 0, "\(fleet.stderr)")
        let attestation = try row(fleet)["attestation"] as? [String: Any]
        #expect(attestation?["genuine"] as? Bool == true, "\(fleet.stdout)")
        #expect((attestation?["revocation"] as? [String: Any])?["status"] as? String == "checked")
        #expect(attestation?["problemCode"] is NSNull)

        let issuer = revoked == "att-leaf" ? "att-ca" : "att-root"
        let (refused, judged) = try await TestProcess.onThread {
            () throws -> (CLIRunner.Result, CLIRunner.Result) in
            try bed.blob.pki.revoke(revoked, issuer: issuer)
            try bed.blob.pki.crl(of: issuer)
            return (try bed.verify(registration), try bed.fleet(["--attest", "--policy", policy]))
        }
        let error = try ErrorCodeTests.expectDocumentedError(refused, status: 2, code: "certificate-revoked")
        let name = revoked == "att-leaf" ? "Test Attestation Key" : "Test Attestation CA"
        #expect((error["message"] as? String)?.contains(name) == true, "\(error)")
        #expect(
            (error["message"] as? String)?.contains(bed.blob.server.url("\(issuer).crl")) == true, "\(error)")

        // fleet: the key is not genuine, with the same code, and fails the policy (exit 7).
        #expect(judged.status == 7, "\(judged.stderr)")
        let judgedRow = try row(judged)
        let verdict = judgedRow["attestation"] as? [String: Any]
        #expect(verdict?["genuine"] as? Bool == false)
        #expect(verdict?["problemCode"] as? String == "certificate-revoked", "\(judged.stdout)")
        let reasons = (judgedRow["policy"] as? [String: Any])?["reasons"] as? [String] ?? []
        #expect(reasons.contains { $0.contains("revoked") }, "\(reasons)")
    }

    @Test func anUnreachableCRLIsSaidAndRequiredRevocationFails() async throws {
        let closed = try VirtualKeyBed.freePort(type: SOCK_STREAM)
        let unreachable = "http://127.0.0.1:\(closed)/att-ca.crl"
        let bed = try await TestProcess.onThread { try AttestedKeyBed(leafCRL: unreachable) }
        let registration = try await TestProcess.onThread { () throws -> String in
            try bed.cacheMetadata()
            try bed.serve()
            return try bed.register()
        }
        let policy = try bed.policy()

        let plain = try await TestProcess.onThread { try bed.verify(registration) }
        #expect(plain.status == 0, "\(plain.stderr)")
        let revocation =
            (try plain.object()["registration"] as? [String: Any])?["revocation"] as? [String: Any]
        #expect(revocation?["status"] as? String == "not-checked", "\(plain.stdout)")
        // The CA's own CRL (from the root) was used; the leaf's could not be fetched.
        #expect(revocation?["crls"] as? [String] == [bed.blob.server.url("att-root.crl")])
        let problems = revocation?["problems"] as? [String] ?? []
        #expect(problems.count == 1 && problems.first?.contains(unreachable) == true, "\(problems)")
        #expect(plain.stderr.contains("revocation not checked"), "\(plain.stderr)")
        #expect(plain.stderr.contains(unreachable))

        let required = try await TestProcess.onThread {
            try bed.verify(registration, ["--require-revocation"])
        }
        let error = try ErrorCodeTests.expectDocumentedError(
            required, status: 2, code: "revocation-not-checked")
        #expect((error["message"] as? String)?.contains(unreachable) == true, "\(error)")

        // fleet: genuine, but said on standard error and in the row; required, not genuine.
        let fleet = try await TestProcess.onThread { try bed.fleet(["--attest"]) }
        #expect(fleet.status == 0, "\(fleet.stderr)")
        let attestation = try row(fleet)["attestation"] as? [String: Any]
        #expect(attestation?["genuine"] as? Bool == true, "\(fleet.stdout)")
        #expect((attestation?["revocation"] as? [String: Any])?["status"] as? String == "not-checked")
        #expect(fleet.stderr.contains("\(bed.uri): revocation not checked"), "\(fleet.stderr)")
        let strict = try await TestProcess.onThread {
            try bed.fleet(["--attest", "--require-revocation", "--policy", policy])
        }
        #expect(strict.status == 7, "\(strict.stderr)")
        let verdict = try row(strict)["attestation"] as? [String: Any]
        #expect(verdict?["genuine"] as? Bool == false)
        #expect(verdict?["problemCode"] as? String == "revocation-not-checked", "\(strict.stdout)")
    }

    /// `fleet --json` says in each row how old the metadata is and whether it is stale, as the
    /// OpenMetrics text and the warning on standard error do.
    @Test func fleetRowsSayWhetherTheMetadataIsStale() async throws {
        let bed = try await TestProcess.onThread { try AttestedKeyBed() }
        let none = try await TestProcess.onThread { () throws -> CLIRunner.Result in
            try bed.serve()
            return try bed.fleet([])
        }
        #expect(try row(none)["metadata"] is NSNull, "\(none.stdout)")

        let (stale, metrics, csv) = try await TestProcess.onThread {
            () throws -> (CLIRunner.Result, CLIRunner.Result, CLIRunner.Result) in
            try bed.cacheMetadata(no: 500, nextUpdate: day(-1))
            return (try bed.fleet([]), try bed.fleet(["--openmetrics"]), try bed.fleet(["--csv"]))
        }
        #expect(stale.status == 0, "\(stale.stderr)")
        let staleRow = try row(stale)
        #expect(staleRow["model"] as? String == "Test Revocation Key")
        let metadata = try #require(staleRow["metadata"] as? [String: Any], "\(stale.stdout)")
        #expect(metadata["no"] as? Int == 500)
        #expect(metadata["nextUpdate"] as? String == day(-1))
        #expect(metadata["stale"] as? Bool == true)
        // Stored moments ago by `mds update` (a generous bound: the machine may be loaded).
        let age = try #require(metadata["ageSeconds"] as? Int)
        #expect(age >= 0 && age < 600, "\(age)")
        #expect(stale.stderr.contains("past its nextUpdate (\(day(-1)))"), "\(stale.stderr)")
        #expect(metrics.stdout.contains("\nsecuritykey_mds_stale 1\n"), "\(metrics.stdout)")
        let lines = csv.stdout.split(separator: "\n").map {
            $0.split(separator: ",", omittingEmptySubsequences: false)
        }
        #expect(lines.first?.suffix(2) == ["metadataAgeSeconds", "metadataStale"], "\(csv.stdout)")
        #expect(lines.dropFirst().first?.last == "true", "\(csv.stdout)")

        let fresh = try await TestProcess.onThread { () throws -> CLIRunner.Result in
            try bed.cacheMetadata(no: 501, nextUpdate: day(30))
            return try bed.fleet([])
        }
        let current = try row(fresh)["metadata"] as? [String: Any]
        #expect(current?["no"] as? Int == 501)
        #expect(current?["stale"] as? Bool == false, "\(fresh.stdout)")
        #expect(!fresh.stderr.contains("nextUpdate"), "\(fresh.stderr)")
    }
}
