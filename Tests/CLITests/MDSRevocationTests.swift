import Foundation
import TestProcesses
import Testing

/// A metadata BLOB signed under a test PKI made with openssl: root (the anchor, no CRL named)
/// → CA (naming `rootCRL`) → signer (RSA, naming `caCRL`), all in `pki.directory`, which
/// `server` serves with the CRLs and the BLOBs written there (and whatever else a test puts in
/// `pki`: AttestationRevocationTests adds an attestation PKI).
struct SignedBLOBBed {
    let pki: TestPKI
    let server: LoopbackHTTPServer

    init(rootCRL: ((LoopbackHTTPServer) -> String)? = nil, caCRL: ((LoopbackHTTPServer) -> String)? = nil)
        throws
    {
        pki = try TestPKI()
        server = try LoopbackHTTPServer(directory: pki.directory)
        try pki.certificate("root", subject: "/CN=Test MDS Root", issuer: nil, isCA: true, serial: "1000")
        try pki.certificate(
            "ca", subject: "/CN=Test MDS CA", issuer: "root", isCA: true,
            crlURLs: [(rootCRL ?? { $0.url("root.crl") })(server)], serial: "2000")
        try pki.certificate(
            "signer", subject: "/CN=Test MDS Signer", issuer: "ca", isCA: false,
            crlURLs: [(caCRL ?? { $0.url("ca.crl") })(server)], serial: "3000", key: .rsa)
        try pki.crl(of: "root")
        try pki.crl(of: "ca")
    }

    /// Writes `name`: a BLOB (RS256 JWS, x5c signer and CA) numbered `no`, with `nextUpdate`
    /// and `entries`.
    func writeBLOB(_ name: String, no: Int, nextUpdate: String, entries: [[String: Any]] = []) throws {
        let x5c = try ["signer", "ca"].map { Data(try pki.bytes("\($0).der")).base64EncodedString() }
        let header = try JSONSerialization.data(withJSONObject: ["alg": "RS256", "typ": "JWT", "x5c": x5c])
        let payload = try JSONSerialization.data(withJSONObject: [
            "legalHeader": "test data", "no": no, "nextUpdate": nextUpdate, "entries": entries,
        ])
        let input = base64URL([UInt8](header)) + "." + base64URL([UInt8](payload))
        let signature = try pki.sign(Array(input.utf8), with: "signer")
        try Data((input + "." + base64URL(signature)).utf8).write(
            to: pki.directory.appendingPathComponent(name))
    }

    func update(_ name: String, _ extra: [String] = [], environment: [String: String]) throws
        -> CLIRunner.Result
    {
        try CLIRunner.run(
            ["mds", "update", "--url", server.url(name), "--anchor", pki.path("root.pem"), "--json"] + extra,
            environment: environment)
    }
}

/// A UTC day `days` from today, as MDS3 writes nextUpdate.
func day(_ days: Int) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd"
    return formatter.string(from: Date().addingTimeInterval(Double(days) * 86400))
}

@Suite("mds update: the signing chain's CRLs, and the refresh", .serialized)
struct MDSRevocationTests {
    @Test func crlsAreCheckedAndARevokedIntermediateIsRefused() throws {
        let bed = try SignedBLOBBed()
        let (dir, env) = temporaryCache()
        defer { try? FileManager.default.removeItem(at: dir) }
        try bed.writeBLOB("blob-500.jwt", no: 500, nextUpdate: day(30))

        let update = try bed.update("blob-500.jwt", environment: env)
        #expect(update.status == 0, "\(update.stderr)")
        let revocation = try update.object()["revocation"] as? [String: Any]
        #expect(revocation?["status"] as? String == "checked")
        // The signer names the CA's CRL, the CA the root's (as openssl wrote them above).
        #expect(revocation?["crls"] as? [String] == [bed.server.url("ca.crl"), bed.server.url("root.crl")])
        #expect(!update.stderr.contains("revocation not checked"))

        // Three days on, both CRLs (nextUpdate in 48 hours) are out of date: not checked, said so.
        let later = ISO8601DateFormatter().string(from: Date().addingTimeInterval(3 * 86400))
        let stale = try bed.update("blob-500.jwt", ["--verify-time", later], environment: env)
        #expect(stale.status == 0, "\(stale.stderr)")
        let staleRevocation = try stale.object()["revocation"] as? [String: Any]
        #expect(staleRevocation?["status"] as? String == "not-checked")
        #expect((staleRevocation?["problems"] as? [String])?.count == 2)
        #expect(stale.stderr.contains("revocation not checked"))
        #expect(stale.stderr.contains("out of date"))

        // The root revokes the CA (serial 0x2000): a newer BLOB signed under it is refused.
        try bed.pki.revoke("ca", issuer: "root")
        try bed.pki.crl(of: "root")
        try bed.writeBLOB("blob-501.jwt", no: 501, nextUpdate: day(30))
        let revoked = try bed.update("blob-501.jwt", environment: env)
        _ = try ErrorCodeTests.expectDocumentedError(revoked, status: 2, code: "metadata-signer-revoked")
        let status = try CLIRunner.run(["mds", "status", "--json"], environment: env)
        #expect(try status.object()["no"] as? Int == 500)
    }

    @Test func anUnreachableCRLIsReportedAndRequiredRevocationFails() throws {
        let closed = try VirtualKeyBed.freePort(type: SOCK_STREAM)
        let unreachable = "http://127.0.0.1:\(closed)/root.crl"
        let bed = try SignedBLOBBed(rootCRL: { _ in unreachable })
        let (dir, env) = temporaryCache()
        defer { try? FileManager.default.removeItem(at: dir) }
        try bed.writeBLOB("blob.jwt", no: 500, nextUpdate: day(30))

        let required = try bed.update("blob.jwt", ["--require-revocation"], environment: env)
        _ = try ErrorCodeTests.expectDocumentedError(required, status: 2, code: "revocation-not-checked")
        #expect(
            !FileManager.default.fileExists(
                atPath: dir.appendingPathComponent("securitykey/mds3-blob.json").path))

        let update = try bed.update("blob.jwt", environment: env)
        #expect(update.status == 0, "\(update.stderr)")
        let revocation = try update.object()["revocation"] as? [String: Any]
        #expect(revocation?["status"] as? String == "not-checked")
        #expect(revocation?["crls"] as? [String] == [bed.server.url("ca.crl")])
        let problems = revocation?["problems"] as? [String] ?? []
        #expect(problems.count == 1 && problems[0].contains(unreachable), "\(problems)")
        #expect(update.stderr.contains("revocation not checked"))
        #expect(update.stderr.contains(unreachable))
    }

    @Test func ifDueWaitsForNextUpdate() throws {
        let bed = try SignedBLOBBed()
        let (dir, env) = temporaryCache()
        defer { try? FileManager.default.removeItem(at: dir) }
        try bed.writeBLOB("current.jwt", no: 500, nextUpdate: day(30))
        try bed.writeBLOB("newer.jwt", no: 501, nextUpdate: day(60))
        #expect(try bed.update("current.jwt", environment: env).status == 0)

        // Not due: nothing is fetched (the URL has no server behind it) and nothing changes.
        let closed = try VirtualKeyBed.freePort(type: SOCK_STREAM)
        let notDue = try CLIRunner.run(
            ["mds", "update", "--if-due", "--url", "http://127.0.0.1:\(closed)/newer.jwt", "--json"],
            environment: env)
        #expect(notDue.status == 0, "\(notDue.stderr)")
        let answer = try notDue.object()
        #expect(answer["due"] as? Bool == false)
        #expect((answer["metadata"] as? [String: Any])?["no"] as? Int == 500)
        #expect((answer["metadata"] as? [String: Any])?["nextUpdate"] as? String == day(30))

        // A cached BLOB whose nextUpdate has passed is due: the refresh fetches the newer one.
        let (dueDir, dueEnv) = temporaryCache()
        defer { try? FileManager.default.removeItem(at: dueDir) }
        try bed.writeBLOB("old.jwt", no: 499, nextUpdate: day(-1))
        let old = try bed.update("old.jwt", environment: dueEnv)
        #expect(old.status == 0, "\(old.stderr)")
        #expect(old.stderr.contains("has passed"))
        let stale = try CLIRunner.run(["mds", "status", "--json"], environment: dueEnv)
        #expect(try stale.object()["stale"] as? Bool == true)
        #expect(stale.stderr.contains("past its nextUpdate (\(day(-1)))"))
        let due = try CLIRunner.run(
            [
                "mds", "update", "--if-due", "--url", bed.server.url("newer.jwt"), "--anchor",
                bed.pki.path("root.pem"), "--json",
            ],
            environment: dueEnv)
        #expect(due.status == 0, "\(due.stderr)")
        #expect(try due.object()["no"] as? Int == 501)
        let fresh = try CLIRunner.run(["mds", "status", "--json"], environment: dueEnv)
        #expect(try fresh.object()["stale"] as? Bool == false)
        #expect(try fresh.object()["revocation"] as? String == "checked")
        #expect(fresh.stderr.isEmpty)
    }
}

@Suite("The MDS refresh units")
struct MDSRefreshUnitTests {
    static let systemd = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("systemd")

    /// systemd's own checker accepts the timer and both services (the binary path pointed at the
    /// built one, as `make install` points it at its BINDIR), and the services run the refresh.
    @Test(arguments: [
        ("securitykey-mds-update.service", false), ("securitykey-mds-update-system.service", true),
    ])
    func unitsVerify(service: String, system: Bool) throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("units-\(UUID())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let text = try String(contentsOf: Self.systemd.appendingPathComponent(service), encoding: .utf8)
        #expect(text.contains("ExecStart=/usr/local/bin/securitykey mds update --if-due\n"))
        let installed = work.appendingPathComponent("securitykey-mds-update.service")
        try text.replacingOccurrences(of: "/usr/local/bin/securitykey", with: CLIRunner.binary.path)
            .write(to: installed, atomically: true, encoding: .utf8)
        let timer = work.appendingPathComponent("securitykey-mds-update.timer")
        try FileManager.default.copyItem(
            at: Self.systemd.appendingPathComponent("securitykey-mds-update.timer"), to: timer)
        let verify = try TestProcess.run(
            "/usr/bin/systemd-analyze",
            (system ? [] : ["--user"]) + ["--man=no", "verify", timer.path, installed.path],
            environment: ["XDG_RUNTIME_DIR": work.path], timeout: .seconds(60))
        #expect(verify.status == 0, "\(verify.stderrText)")
        #expect(verify.stderrText.isEmpty, "\(verify.stderrText)")
    }
}
